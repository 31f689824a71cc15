-- name: fair/force_release
-- version: 6
-- summary: Delete a fair lock whoever holds it; wake the first waiter and tell the holders.
-- redisson: RedissonFairLock.forceUnlockAsync (drop stale head waiters; del -> publish 0 to the head, 1; else 0)
-- time: server - now to drop waiters whose deadline has passed (Redisson passes the client's clock)
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: queue - waiter list redisson_lock_queue:{lock}, first come first
-- KEYS[3]: timeouts - zset redisson_lock_timeout:{lock}; waiter -> deadline, ms since the epoch (then dropped)
-- KEYS[4]: channel - redisson_lock__channel:{lock}; waiters listen on <channel>:<waiter>, holders on <channel>
-- ARGV[1]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- ARGV[2]: named - optional: 'named' when the operator named the kind, so a lock's hash without a TTL goes too
-- return 1: the lock key deleted; message 0 on <channel>:<first waiter> if one waits, and on <channel>
-- return 0: there was no lock; only stale waiters dropped, nothing published
-- error RLK_BADARG: not exactly 4 keys and 1 argument (or 2), or named not 'named'
-- error RLK_WRONGTYPE: lock key not a lock's (lib/lock_shape; no TTL: unless named), queue not a list, timeouts no zset
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

--- @include "lib/lock_shape"

if #KEYS ~= 4 or (#ARGV ~= 1 and #ARGV ~= 2) then
  return redis.error_reply('RLK_BADARG expected 4 keys and 1 argument (named: 2)')
end
if ARGV[2] and ARGV[2] ~= 'named' then
  return redis.error_reply('RLK_BADARG named must be exactly named')
end
local lock, queue, timeouts, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publish, bad_publish = publish_cmd(ARGV[1])
if not publish then return bad_publish end
-- Reads first (each key's type checked by them), then writes.
local due, head, bad = fair_scan(queue, timeouts, now_ms())
if bad then return bad end
local lock_type = redis.call('type', lock).ok
if lock_type ~= 'none' and lock_type ~= 'hash' then
  return fair_wrongtype()
end
-- A destructive action: the key's shape is read every time (a key rlk does not own stays as it is).
local found, unsure = lock_shape(lock)
if found or (unsure and not ARGV[2]) then
  return redis.error_reply('RLK_WRONGTYPE lock key holds ' .. (found or unsure
    .. ': name the kind to remove it'))
end
local first = drop_stale(queue, timeouts, due, head)
if lock_type == 'none' then
  return 0
end
redis.call('del', lock)
if first then
  redis.call(publish, channel .. ':' .. first, '0')
end
redis.call(publish, channel, '0')
return 1
