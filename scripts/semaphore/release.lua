-- name: semaphore/release
-- version: 7
-- summary: Give permits back to a semaphore (creating its key if missing), reserve them for the first waiter, publish.
-- redisson: RedissonSemaphore.releaseAsync(permits) (incrby, publish the new count); grant: rlk's
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: channel - wake-up channel redisson_sc:{name}; grants go to <channel>:rlk:<ticket/1024>
-- KEYS[3]: waiters - list {name}:rlk_waiters of waiting "<ticket> <permits>", first come first
-- KEYS[4]: grant - string {name}:rlk_next: the "<ticket> <permits>" permits are reserved for, PX claim window
-- ARGV[1]: permits - permits to give back, integer 1..1000000000000
-- ARGV[2]: claim_ms - how long the first waiter granted has to claim, integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return integer: the new count; when > 0, the first waiter it covers granted (none reserved), and published on channel
-- error RLK_BADARG: not exactly 4 keys and 3 arguments, permits or claim_ms out of range, or overflow
-- error RLK_WRONGTYPE: semaphore key not an integer string, grant not a string, waiters not a list (read: no grant)
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/load_count"

--- @include "lib/sem_add"

-- The usual release, decided first and alone: 4 keys and 3 arguments, permits and claim_ms of
-- under 13 digits, publish or spublish (lib/sem_release's checks pass them), nobody queued and no
-- reservation (one EXISTS of both: keys that do not exist have no type to check). It ends here,
-- before the helpers of the general case are defined: a closure made on every call is server
-- time on every call (docs/performance.md).
do
  local semaphore, permits, claim_ms, publish = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
  if #KEYS == 4 and #ARGV == 3 and (publish == 'publish' or publish == 'spublish')
      and #permits < 13 and permits:find('^[1-9]%d*$') and #claim_ms < 13 and claim_ms:find('^[1-9]%d*$') then
    local count, err = load_count(semaphore)
    if err then return err end
    if (count or 0) + tonumber(permits) <= MAX_COUNT and redis.call('exists', KEYS[4], KEYS[3]) == 0 then
      local new = sem_add(semaphore, permits)
      if new > 0 then
        redis.call(publish, KEYS[2], string.format('%.0f', new))
      end
      return new
    end
  end
end

--- @include "lib/sem_release"

return sem_release(false)
