-- name: fair/renew
-- version: 2
-- summary: Reset the lease of a fair lock the owner holds (watchdog renewal); drops stale head waiters first.
-- redisson: RedissonBaseLock.renewExpirationAsync (hexists -> pexpire, 1; else 0)
-- time: server - now to drop waiters whose deadline has passed
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: queue - waiter list redisson_lock_queue:{lock}, first come first
-- KEYS[3]: timeouts - zset redisson_lock_timeout:{lock}; waiter -> deadline, ms since the epoch (then dropped)
-- ARGV[1]: lease_ms - new lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- return 1: owner holds the lock; its lease is now lease_ms
-- return 0: owner does not hold the lock (or there is no lock); only stale waiters dropped
-- error RLK_BADARG: not exactly 3 keys and 2 arguments
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the lock key is not a hash, the queue not a list, or the timeouts not a sorted set
-- end

--- @include "lib/is_lease"

-- The reason when key holds another type than want, else nil.
--- @include "lib/wrong_type"

-- Milliseconds since the epoch by the server's clock.
--- @include "lib/now_ms"

-- Drops every waiter whose deadline has passed, wherever it is in the queue (a live rlk waiter
-- keeps moving its deadline), then head waiters without a deadline. True when the head changed.
--- @include "lib/drop_stale"

if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 2 arguments')
end
local lock, queue, timeouts, lease_ms, owner = KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
local why = wrong_type(lock, 'hash', 'lock') or wrong_type(queue, 'list', 'queue')
  or wrong_type(timeouts, 'zset', 'timeouts')
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

drop_stale(queue, timeouts, now_ms())
if redis.call('hexists', lock, owner) == 1 then
  redis.call('pexpire', lock, lease_ms)
  return 1
end
return 0
