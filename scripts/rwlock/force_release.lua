-- name: rwlock/force_release
-- version: 4
-- summary: Delete a read-write lock in a mode whoever holds it, with its reads' timeout keys; grant a writer; publish.
-- redisson: RedissonReadLock.forceUnlockAsync (read: del, publish 0) / RedissonWriteLock (write: publish 1)
-- time: none
-- KEYS[1]: lock - the lock hash; field mode -> read|write, <owner> -> reads, <owner>:write -> writes
-- KEYS[2]: channel - read-write lock channel redisson_rwlock:{lock}
-- KEYS[3]: prefix - {lock} (lock if it has a '{'); the script derives <prefix>:<owner>:rwlock_timeout:<n>, same slot
-- KEYS[4]: waiters - list {lock}:rlk_waiters of waiting writers' tickets, first come first
-- KEYS[5]: grant - string {lock}:rlk_next: ticket the free lock is reserved for, PX claim window
-- ARGV[1]: mode - which lock to delete: read, write, or any
-- ARGV[2]: claim_ms - how long the first waiting writer has to claim the lock, integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- ARGV[4]: named - optional: 'named' when the operator named the kind, so a lock's hash without a TTL goes too
-- return 1: the lock was in that mode: deleted with its timeout keys, reserved for a writer; 0 (read) or 1 published
-- return 0: there is no lock, or it is in the other mode; nothing changed
-- error RLK_BADARG: not 5 keys and 3 (or 4) arguments, bad named or mode or prefix, claim_ms not 1..10^12
-- error RLK_WRONGTYPE: lock key not a read-write lock's (lib/rw_shape; no TTL: unless named), or waiters not a list
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

-- Redisson's prefix of the per-read timeout keys: the hash tag of the lock's slot.
--- @include "lib/timeout_prefix"

-- 'none', 'read' or 'write'; nil and the reason when the key is not a read-write lock.
--- @include "lib/rw_mode"

--- @include "lib/rw_shape"

--- @include "lib/publish_cmd"

--- @include "lib/is_lease"

-- Reserves the freed lock for the first waiter whose client still listens, and wakes it alone.
--- @include "lib/hand_over"

-- Deletes the timeout key of every read counted in the hash.
local function delete_reads(lock, prefix)
  local flat = redis.call('hgetall', lock)
  for i = 1, #flat, 2 do
    local field, count = flat[i], tonumber(flat[i + 1])
    if field ~= 'mode' and field:sub(-6) ~= ':write' and count then
      for n = 1, count do
        redis.call('del', prefix .. ':' .. field .. ':rwlock_timeout:' .. n)
      end
    end
  end
end

if #KEYS ~= 5 or (#ARGV ~= 3 and #ARGV ~= 4) then
  return redis.error_reply('RLK_BADARG expected 5 keys and 3 arguments (named: 4)')
end
if ARGV[4] and ARGV[4] ~= 'named' then
  return redis.error_reply('RLK_BADARG named must be exactly named')
end
local lock, channel, prefix, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local which, claim_ms = ARGV[1], ARGV[2]
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
if prefix ~= timeout_prefix(lock) then
  return redis.error_reply('RLK_BADARG prefix must be ' .. timeout_prefix(lock))
end
if which ~= 'read' and which ~= 'write' and which ~= 'any' then
  return redis.error_reply('RLK_BADARG mode must be read, write or any')
end
if not is_lease(claim_ms) then
  return redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
end
local mode, why = rw_mode(lock)
if not mode then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end
-- A destructive action: the key's shape is read every time (a key rlk does not own stays as it is).
local found, unsure = rw_shape(lock)
if found or (unsure and not ARGV[4]) then
  return redis.error_reply('RLK_WRONGTYPE lock key holds ' .. (found or unsure
    .. ': name the kind to remove it'))
end

if mode == 'none' or (which ~= 'any' and which ~= mode) then
  return 0
end
-- The first waiting writer leaves the queue: the first write, so a waiters key of another type is
-- refused with nothing changed.
local head = redis.pcall('lpop', waiters)
if type(head) == 'table' then
  return redis.error_reply('RLK_WRONGTYPE waiters key holds a ' .. redis.call('type', waiters).ok
    .. ', not a list')
end
delete_reads(lock, prefix)
redis.call('del', lock)
if head then
  hand_over(head, waiters, grant, claim_ms, channel, publish)
end
if mode == 'read' then
  redis.call(publish, channel, '0')
else
  redis.call(publish, channel, '1')
end
return 1
