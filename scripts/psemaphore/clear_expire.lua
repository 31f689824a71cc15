-- name: psemaphore/clear_expire
-- version: 2
-- summary: Remove the time to live of a permit-expirable semaphore's count and permits keys; publishes nothing.
-- redisson: RedissonPermitExpirableSemaphore.clearExpireAsync (persist on name and {name}:timeout; 1 when one had)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- return 1: at least one of the keys had a time to live; neither has one now
-- return 0: neither key exists or has a time to live; nothing changed
-- error RLK_BADARG: not exactly 2 keys and no arguments
-- error RLK_WRONGTYPE: semaphore key not a string holding a count (lib/count_shape), or timeouts not a zset
-- end

--- @include "lib/wrong_type"

--- @include "lib/count_shape"

--- @include "lib/persist_keys"

if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('RLK_BADARG expected 2 keys and no arguments')
end
local semaphore, timeouts = KEYS[1], KEYS[2]
local why = count_shape(semaphore, 'semaphore') or wrong_type(timeouts, 'zset', 'timeouts')
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

return persist_keys({ semaphore, timeouts })
