-- name: semaphore/available
-- version: 2
-- summary: Read a semaphore's available permits (read-only).
-- redisson: RedissonSemaphore.availablePermitsAsync (get)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- return integer: the count (may be negative after add_permits with a negative delta); 0 when there is no key
-- error RLK_BADARG: not exactly 1 key and no arguments
-- error RLK_WRONGTYPE: the semaphore key holds a non-string, or a string that is not an integer in +-(2^53-1)
-- end

local MAX_COUNT = 9007199254740991

-- The count a semaphore key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_count"

if #KEYS ~= 1 or #ARGV ~= 0 then
  return redis.error_reply('RLK_BADARG expected 1 key and no arguments')
end
local count, err = load_count(KEYS[1])
if err then return err end
return count or 0
