-- name: semaphore/add_permits
-- version: 6
-- summary: Add to (or, with a negative delta, take from) a semaphore's count; a rise grants the first waiter.
-- redisson: RedissonSemaphore.addPermitsAsync(permits) (set get + delta, publish the new count); grant: rlk's
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: channel - wake-up channel redisson_sc:{name}; grants go to <channel>:rlk:<ticket/1024>
-- KEYS[3]: waiters - list {name}:rlk_waiters of waiting "<ticket> <permits>", first come first
-- KEYS[4]: grant - string {name}:rlk_next: the "<ticket> <permits>" permits are reserved for, PX claim window
-- ARGV[1]: delta - permits to add, integer -1000000000000..1000000000000 (may be negative or 0)
-- ARGV[2]: claim_ms - how long the first waiter granted has to claim, integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return integer: the new count (key created when missing, TTL kept); a rise above 0 grants and publishes as release
-- error RLK_BADARG: not exactly 4 keys and 3 arguments, delta or claim_ms malformed or out of range, or overflow
-- error RLK_WRONGTYPE: semaphore key not an integer string, grant not a string, waiters not a list (read: no grant)
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/is_delta"

-- The checks (lib/sem_args, the keys' types included): the count (nil when there is no key), the
-- publish command and the queue's first entry when no reservation lives, or an error reply.
--- @include "lib/sem_args"

-- A rise grants the first waiter it covers (unless a reservation lives) and publishes the count.
--- @include "lib/sem_rise"

local count, publish, head, err = sem_args(is_delta, 'delta must be an integer in -1000000000000..1000000000000')
if err then return err end
local semaphore, channel, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local delta, claim_ms = ARGV[1], ARGV[2]
local old = count or 0
if math.abs(old + tonumber(delta)) > MAX_COUNT then
  return redis.error_reply('RLK_BADARG adding delta would take the count beyond +-9007199254740991')
end

local new = redis.call('incrby', semaphore, delta)
if new > 0 and new > old then
  sem_rise(new, head, waiters, grant, claim_ms, channel, publish)
end
return new
