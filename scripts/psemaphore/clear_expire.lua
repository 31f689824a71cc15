-- name: psemaphore/clear_expire
-- version: 1
-- summary: Remove the time to live of a permit-expirable semaphore's count and permits keys; publishes nothing.
-- redisson: RedissonPermitExpirableSemaphore.clearExpireAsync (persist on name and {name}:timeout; 1 when one had)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- return 1: at least one of the keys had a time to live; neither has one now
-- return 0: neither key exists or has a time to live; nothing changed
-- error RLK_BADARG: not exactly 2 keys and no arguments
-- error RLK_WRONGTYPE: the semaphore key holds a value that is not a string, or timeouts one that is not a zset
-- end

--- @include "lib/wrong_type"

--- @include "lib/persist_keys"

if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('RLK_BADARG expected 2 keys and no arguments')
end
local semaphore, timeouts = KEYS[1], KEYS[2]
local why = wrong_type(semaphore, 'string', 'semaphore') or wrong_type(timeouts, 'zset', 'timeouts')
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

return persist_keys({ semaphore, timeouts })
