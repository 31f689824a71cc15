-- name: fair/renew
-- version: 5
-- summary: Renew a fair lock the owner holds (the watchdog; never cuts its TTL); drops stale waiters first.
-- redisson: RedissonBaseLock.renewExpirationAsync (hexists -> pexpire, 1; else 0)
-- time: server - now to drop waiters whose deadline has passed
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: queue - waiter list redisson_lock_queue:{lock}, first come first
-- KEYS[3]: timeouts - zset redisson_lock_timeout:{lock}; waiter -> deadline, ms since the epoch (then dropped)
-- ARGV[1]: lease_ms - new lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- return 1: owner holds the lock; its TTL is now at least lease_ms (a longer one kept; none: kept none)
-- return 0: owner does not hold the lock (or there is no lock); only stale waiters dropped
-- error RLK_BADARG: not exactly 3 keys and 2 arguments
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the lock key is not a hash, the queue not a list, or the timeouts not a sorted set
-- end

--- @include "lib/is_lease"

-- Reads of the lock, queue or timeouts key; a key of another type: nil and RLK_WRONGTYPE.
--- @include "lib/fair_scan"

-- Milliseconds since the epoch by the server's clock.
--- @include "lib/now_ms"

-- Drops every waiter whose deadline has passed, wherever it is in the queue (a live rlk waiter
-- keeps moving its deadline), then head waiters without a deadline: the head and its deadline.
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
-- Reads first (each key's type checked by them), then writes.
local due, head, bad = fair_scan(queue, timeouts, now_ms())
if bad then return bad end
local held
held, bad = fair_read('hexists', lock, owner)
if bad then return bad end
drop_stale(queue, timeouts, due, head)
if held == 1 then
  -- GT: a renewal never cuts the TTL (the holder id may be shared, another process may count on
  -- a longer fixed lease); a hold without a TTL keeps none.
  redis.call('pexpire', lock, lease_ms, 'gt')
  return 1
end
return 0
