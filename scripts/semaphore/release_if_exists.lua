-- name: semaphore/release_if_exists
-- version: 1
-- summary: Give permits back to a semaphore only while its key exists (never re-creating one that expired).
-- redisson: RedissonSemaphore.releaseIfExistsAsync(permits) (exists == 0 -> 0; incrby, publish, 1); grant: rlk's
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: channel - wake-up channel redisson_sc:{name}; grants go to <channel>:rlk:<ticket/1024>
-- KEYS[3]: waiters - list {name}:rlk_waiters of waiting "<ticket> <permits>", first come first
-- KEYS[4]: grant - string {name}:rlk_next: the "<ticket> <permits>" permits are reserved for, PX claim window
-- ARGV[1]: permits - permits to give back, integer 1..1000000000000
-- ARGV[2]: claim_ms - how long the first waiter granted has to claim, integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 1: released: count + permits (TTL kept); when > 0, the first waiter it covers granted, count published
-- return 0: there is no semaphore key (never set, deleted or expired); nothing changed, nothing published
-- error RLK_BADARG: not exactly 4 keys and 3 arguments, permits or claim_ms out of range, or overflow
-- error RLK_WRONGTYPE: the semaphore key not an integer string, the waiters key not a list, the grant not a string
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/is_permits"

-- The count a semaphore key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_count"

--- @include "lib/is_lease"

--- @include "lib/wrong_type"

--- @include "lib/publish_cmd"

-- Reserves permits for the first waiter avail covers and wakes it alone.
--- @include "lib/sem_grant"

if #KEYS ~= 4 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 4 keys and 3 arguments')
end
local semaphore, channel, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local permits, claim_ms = ARGV[1], ARGV[2]
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
if not is_permits(permits) then
  return redis.error_reply('RLK_BADARG permits must be an integer in 1..1000000000000')
end
if not is_lease(claim_ms) then
  return redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
end
local count, err = load_count(semaphore)
if err then return err end
local why = wrong_type(waiters, 'list', 'waiters') or wrong_type(grant, 'string', 'grant')
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end
if count == nil then
  return 0
end
if count + tonumber(permits) > MAX_COUNT then
  return redis.error_reply('RLK_BADARG releasing permits would take the count above 9007199254740991')
end

local new = redis.call('incrby', semaphore, permits)
-- One reservation at a time: while one lives, its grantee's claim grants the next (the chain).
if new > 0 and redis.call('exists', grant) == 0 then
  sem_grant(waiters, grant, new, claim_ms, channel, publish)
end
if new > 0 then
  redis.call(publish, channel, string.format('%.0f', new))
end
return 1
