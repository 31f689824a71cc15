-- name: semaphore/expire
-- version: 2
-- summary: Give the semaphore key a time to live (the count vanishes when it runs out); publishes nothing.
-- redisson: RedissonSemaphore.expireAsync(Duration) (pexpire on the key; 1 when set)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- ARGV[1]: ttl_ms - the time to live in ms, integer 1..1000000000000 (replaces any TTL the key had)
-- return 1: the key exists and now expires in ttl_ms
-- return 0: there is no key; nothing changed
-- error RLK_BADARG: not exactly 1 key and 1 argument
-- error RLK_BADLEASE: ttl_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: the semaphore key is not a string holding a count (lib/count_shape)
-- end

-- Only the count key, as Redisson: rlk's queue keys ({name}:rlk_waiters, {name}:rlk_next) keep
-- theirs (a waiter cancels its entry; a reservation ends with its claim window).

--- @include "lib/is_lease"

--- @include "lib/count_shape"

--- @include "lib/expire_keys"

if #KEYS ~= 1 or #ARGV ~= 1 then
  return redis.error_reply('RLK_BADARG expected 1 key and 1 argument')
end
local semaphore, ttl_ms = KEYS[1], ARGV[1]
if not is_lease(ttl_ms) then
  return redis.error_reply('RLK_BADLEASE ttl_ms must be an integer in 1..1000000000000')
end
local why = count_shape(semaphore, 'semaphore')
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

return expire_keys({ semaphore }, ttl_ms)
