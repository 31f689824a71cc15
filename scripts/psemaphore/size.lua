-- name: psemaphore/size
-- version: 3
-- summary: Read a permit-expirable semaphore's size (count plus held permits) atomically; writes nothing.
-- redisson: none
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- return array: {count, held}: available permits (0: no key; may be negative), entries of timeouts
-- error RLK_BADARG: not exactly 2 keys and no arguments
-- error RLK_WRONGTYPE: semaphore key not a string holding an integer in +-(2^53-1), or timeouts key not a zset
-- end

-- Expired permits count as held: a reclaim moves them to the count, so count + held is the size
-- either way.
local MAX_COUNT = 9007199254740991

-- The count a semaphore key holds (nil when there is no key) after checking the timeouts key,
-- or nil and an error reply.
--- @include "lib/psem_load"

if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('RLK_BADARG expected 2 keys and no arguments')
end
local semaphore, timeouts = KEYS[1], KEYS[2]
local count, err = psem_load(semaphore, timeouts)
if err then return err end
return { count or 0, redis.call('zcard', timeouts) }
