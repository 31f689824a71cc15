-- name: semaphore/try_acquire
-- version: 2
-- summary: Take permits from a semaphore when that many are available; never waits, publishes nothing.
-- redisson: RedissonSemaphore.tryAcquireAsync(permits) (get >= permits -> decrby, 1; else 0)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- ARGV[1]: permits - permits to take, integer 1..1000000000000
-- return 1: acquired: the count is now count - permits (its TTL, if any, is kept)
-- return 0: fewer than permits available, or no semaphore key; nothing changed
-- error RLK_BADARG: not exactly 1 key and 1 argument, or permits is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: the semaphore key holds a non-string, or a string that is not an integer in +-(2^53-1)
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/is_permits"

-- The count a semaphore key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_count"

if #KEYS ~= 1 or #ARGV ~= 1 then
  return redis.error_reply('RLK_BADARG expected 1 key and 1 argument')
end
local semaphore, permits = KEYS[1], ARGV[1]
if not is_permits(permits) then
  return redis.error_reply('RLK_BADARG permits must be an integer in 1..1000000000000')
end
local count, err = load_count(semaphore)
if err then return err end

if count ~= nil and count >= tonumber(permits) then
  redis.call('decrby', semaphore, permits)
  return 1
end
return 0
