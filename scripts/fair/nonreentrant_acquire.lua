-- name: fair/nonreentrant_acquire
-- version: 1
-- summary: Acquire a non-reentrant fair lock in FIFO order, or join its queue; the holder asking again is refused.
-- redisson: RedissonNonReentrantFairLock.tryLockInnerAsync (drop stale; acquire when first; own -> error; else queue)
-- time: server - now for the waiters' deadlines (Redisson passes the client's clock)
-- KEYS[1]: lock - the lock hash; field <owner> -> 1 (the fair lock's layout)
-- KEYS[2]: queue - waiter list redisson_lock_queue:{lock}, first come first
-- KEYS[3]: timeouts - zset redisson_lock_timeout:{lock}; waiter -> deadline, ms since the epoch (then dropped)
-- ARGV[1]: lease_ms - lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[3]: wait_ms - keep-alive: a queued caller's deadline becomes now + wait_ms, integer 1..1000000000000
-- return nil: acquired (free, and no queue or owner first: dequeued; other deadlines unchanged)
-- return integer: queued; ms to wait: first in queue: holder's PTTL (-1 none); else until the head's deadline
-- error RLK_BADARG: not exactly 3 keys and 3 arguments, or wait_ms is not an integer in 1..1000000000000
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the lock key is not a hash, the queue not a list, or the timeouts not a sorted set
-- error RLK_REENTRY: owner holds the lock already (Redisson: NON_REENTRANT_REACQUIRE); nothing changed
-- end

--- @include "lib/is_lease"

-- Reads of the lock, queue or timeouts key; a key of another type: nil and RLK_WRONGTYPE.
--- @include "lib/fair_scan"

-- Milliseconds since the epoch by the server's clock.
--- @include "lib/now_ms"

-- Drops every waiter whose deadline has passed, wherever it is in the queue (a live rlk waiter
-- keeps moving its deadline), then head waiters without a deadline: the head and its deadline.
--- @include "lib/drop_stale"

if #KEYS ~= 3 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 3 arguments')
end
local lock, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
local lease_ms, owner, wait_ms = ARGV[1], ARGV[2], ARGV[3]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if not is_lease(wait_ms) then
  return redis.error_reply('RLK_BADARG wait_ms must be an integer in 1..1000000000000')
end

-- Reads first (each key's type checked by them), then writes. pttl: the lock's PTTL (-2: free),
-- read when the caller may take it; held: whether the caller holds it (not read when free).
local now = now_ms()
local due, head, bad = fair_scan(queue, timeouts, now)
if bad then return bad end
local pttl, held = nil, 0
if not head or head == owner then
  pttl = redis.call('pttl', lock)
end
if pttl ~= -2 then
  held, bad = fair_read('hexists', lock, owner)
  if bad then return bad end
end
-- The holder asking again: refused before the first write (Redisson drops stale waiters first).
if held == 1 then
  return redis.error_reply('RLK_REENTRY the lock is non-reentrant and owner holds it already')
end
local first, first_deadline = drop_stale(queue, timeouts, due, head)
if not first or first == owner then
  pttl = pttl or redis.call('pttl', lock)
  if pttl == -2 then
    if first then
      redis.call('lpop', queue)
    end
    redis.call('zrem', timeouts, owner)
    redis.call('hset', lock, owner, '1')
    redis.call('pexpire', lock, lease_ms)
    return nil
  end
end
-- Queued (or joining at the tail): the deadline moves to now + wait_ms, so a waiter that stops
-- calling (it died) is dropped wait_ms after its last call, wherever it stands.
if redis.call('zadd', timeouts, now + tonumber(wait_ms), owner) == 1 then
  redis.call('rpush', queue, owner)
end
if not first or first == owner then
  return pttl
end
-- Behind the head: retry at the head's deadline at the latest (when a dead head is dropped).
return first_deadline - now
