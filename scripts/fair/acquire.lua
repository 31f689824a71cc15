-- name: fair/acquire
-- version: 8
-- summary: Acquire or re-enter a fair lock in FIFO order, or join its queue (or stay in it, moving its deadline on).
-- redisson: RedissonFairLock.tryLockInnerAsync (EVAL_LONG: drop stale waiters; acquire when first; else enqueue)
-- time: server - now for the waiters' deadlines (Redisson passes the client's clock)
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: queue - waiter list redisson_lock_queue:{lock}, first come first
-- KEYS[3]: timeouts - zset redisson_lock_timeout:{lock}; waiter -> deadline, ms since the epoch (then dropped)
-- ARGV[1]: lease_ms - lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[3]: wait_ms - keep-alive: a queued caller's deadline becomes now + wait_ms, integer 1..1000000000000
-- return nil: acquired (free, and no queue or owner first: dequeued; other deadlines kept) or re-entered (TTL not cut)
-- return integer: queued; ms to wait: first in queue: holder's PTTL (-1 none); else until the head's deadline
-- error RLK_BADARG: not exactly 3 keys and 3 arguments, or wait_ms is not an integer in 1..1000000000000
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: lock key not a lock's (lib/lock_shape), queue not a list, or timeouts not a sorted set
-- end

-- The usual acquire of a free lock ends here; otherwise what it read goes on (lib/fair_take).
--- @include "lib/fair_take"

local taken, now, due, head, pttl = fair_take()
if taken then
  return nil
end

-- luacheck: push ignore 431 (their parameters are named as the values passed)
-- Checks, reads, drops stale waiters, then acquires, re-enters or queues (lib/fair_acquire).
--- @include "lib/fair_acquire"
-- luacheck: pop

local reply = fair_acquire(true, now, due, head, pttl)
return reply
