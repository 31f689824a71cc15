-- name: semaphore/drain
-- version: 2
-- summary: Take every available permit at once (a negative count is reset to 0); publishes nothing.
-- redisson: RedissonSemaphore.drainPermitsAsync (get; set 0; return the old count)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- return integer: the count before the call (0 when there was no key, which stays missing); the count is now 0
-- error RLK_BADARG: not exactly 1 key and no arguments
-- error RLK_WRONGTYPE: the semaphore key holds a non-string, or a string that is not an integer in +-(2^53-1)
-- end

local MAX_COUNT = 9007199254740991

-- The count a semaphore key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_count"

if #KEYS ~= 1 or #ARGV ~= 0 then
  return redis.error_reply('RLK_BADARG expected 1 key and no arguments')
end
local semaphore = KEYS[1]
local count, err = load_count(semaphore)
if err then return err end

if count == nil then
  return 0
end
if count ~= 0 then
  redis.call('decrby', semaphore, string.format('%.0f', count))
end
return count
