-- name: fair/cancel
-- version: 1
-- summary: Take a waiter that gives up out of a fair lock's queue; the deadlines behind it shrink by wait_ms.
-- redisson: RedissonFairLock.acquireFailedAsync (zincrby -wait for those behind; zrem + lrem)
-- time: server - now to drop waiters whose deadline has passed (before the cancel, as every fair script)
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: queue - waiter list redisson_lock_queue:{lock}, first come first
-- KEYS[3]: timeouts - sorted set redisson_lock_timeout:{lock}; waiter -> deadline in ms since the epoch
-- KEYS[4]: channel - channel prefix redisson_lock__channel:{lock}; a waiter listens on <channel>:<waiter>
-- ARGV[1]: owner - the waiter's holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[2]: wait_ms - the thread wait time it queued with, integer 1..1000000000000
-- return 1: removed; later deadlines - wait_ms; if it was first and the lock is free, 0 published to the next
-- return 0: owner is not in the queue; only stale waiters dropped
-- error RLK_BADARG: not exactly 4 keys and 2 arguments, or wait_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the lock key is not a hash, the queue not a list, or the timeouts not a sorted set
-- end

--- @include "lib/is_lease"

-- The reason when key holds another type than want, else nil.
--- @include "lib/wrong_type"

-- Milliseconds since the epoch by the server's clock.
--- @include "lib/now_ms"

-- Drops waiters from the head of the queue while their deadline has passed (or they have none).
--- @include "lib/drop_stale"

if #KEYS ~= 4 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 4 keys and 2 arguments')
end
local lock, queue, timeouts, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, wait_ms = ARGV[1], ARGV[2]
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if not is_lease(wait_ms) then
  return redis.error_reply('RLK_BADARG wait_ms must be an integer in 1..1000000000000')
end
local why = wrong_type(lock, 'hash', 'lock') or wrong_type(queue, 'list', 'queue')
  or wrong_type(timeouts, 'zset', 'timeouts')
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

drop_stale(queue, timeouts, now_ms())
local waiting = redis.call('lrange', queue, 0, -1)
local at = nil
for i = 1, #waiting do
  if waiting[i] == owner then at = i; break end
end
if not at then
  return 0
end
for i = at + 1, #waiting do
  redis.call('zincrby', timeouts, -tonumber(wait_ms), waiting[i])
end
redis.call('zrem', timeouts, owner)
redis.call('lrem', queue, 0, owner)
local first = redis.call('lindex', queue, 0)
if at == 1 and first and redis.call('exists', lock) == 0 then
  redis.call('publish', channel .. ':' .. first, '0')
end
return 1
