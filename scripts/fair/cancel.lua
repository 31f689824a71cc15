-- name: fair/cancel
-- version: 4
-- summary: Take a waiter that gives up out of a fair lock's queue; wake the new head if the lock is free.
-- redisson: RedissonFairLock.acquireFailedAsync (zrem + lrem; Redisson also shifts later deadlines by -wait)
-- time: server - now to drop waiters whose deadline has passed (before the cancel, as every fair script)
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: queue - waiter list redisson_lock_queue:{lock}, first come first
-- KEYS[3]: timeouts - zset redisson_lock_timeout:{lock}; waiter -> deadline, ms since the epoch (then dropped)
-- KEYS[4]: channel - channel prefix redisson_lock__channel:{lock}; a waiter listens on <channel>:<waiter>
-- ARGV[1]: owner - the waiter's holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[2]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 1: removed; if the head changed and the lock is free, 0 published on <channel>:<new head>
-- return 0: owner is not in the queue; only stale waiters dropped (and the new head woken as above)
-- error RLK_BADARG: not exactly 4 keys and 2 arguments
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the lock key is not a hash, the queue not a list, or the timeouts not a sorted set
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

-- Reads of the lock, queue or timeouts key; a key of another type: nil and RLK_WRONGTYPE.
--- @include "lib/fair_scan"

-- Milliseconds since the epoch by the server's clock.
--- @include "lib/now_ms"

-- Drops every waiter whose deadline has passed, wherever it is in the queue (a live rlk waiter
-- keeps moving its deadline), then head waiters without a deadline: the head and its deadline.
--- @include "lib/drop_stale"

--- @include "lib/publish_cmd"

if #KEYS ~= 4 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 4 keys and 2 arguments')
end
local lock, queue, timeouts, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publish, bad_publish = publish_cmd(ARGV[2])
if not publish then return bad_publish end
local owner = ARGV[1]
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
-- Reads first (each key's type checked by them), then writes.
local due, head, bad = fair_scan(queue, timeouts, now_ms())
if bad then return bad end
local lock_type = redis.call('type', lock).ok
if lock_type ~= 'none' and lock_type ~= 'hash' then
  return fair_wrongtype()
end
local first, _, moved = drop_stale(queue, timeouts, due, head)
local removed = redis.call('zrem', timeouts, owner)
removed = redis.call('lrem', queue, 0, owner) + removed
if first == owner then
  moved = true
  first = redis.call('lindex', queue, 0)
end
if moved and first and lock_type == 'none' then
  redis.call(publish, channel .. ':' .. first, '0')
end
if removed > 0 then
  return 1
end
return 0
