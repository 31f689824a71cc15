-- name: psemaphore/expire
-- version: 2
-- summary: Give a permit-expirable semaphore's count and permits keys a time to live; publishes nothing.
-- redisson: RedissonPermitExpirableSemaphore.expireAsync(Duration) (pexpire on name and {name}:timeout; 1 when set)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- ARGV[1]: ttl_ms - the time to live in ms, integer 1..1000000000000 (replaces any TTL the keys had)
-- return 1: at least one of the keys exists and now expires in ttl_ms
-- return 0: neither key exists; nothing changed
-- error RLK_BADARG: not exactly 2 keys and 1 argument
-- error RLK_BADLEASE: ttl_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: semaphore key not a string holding a count (lib/count_shape), or timeouts not a zset
-- end

-- The two keys Redisson's object has, as Redisson: rlk's queue keys ({name}:rlk_waiters,
-- {name}:rlk_next) keep theirs. Expired permits are not reclaimed: both keys get the same TTL.

--- @include "lib/is_lease"

--- @include "lib/wrong_type"

--- @include "lib/count_shape"

--- @include "lib/expire_keys"

if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 1 argument')
end
local semaphore, timeouts, ttl_ms = KEYS[1], KEYS[2], ARGV[1]
if not is_lease(ttl_ms) then
  return redis.error_reply('RLK_BADLEASE ttl_ms must be an integer in 1..1000000000000')
end
local why = count_shape(semaphore, 'semaphore') or wrong_type(timeouts, 'zset', 'timeouts')
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

return expire_keys({ semaphore, timeouts }, ttl_ms)
