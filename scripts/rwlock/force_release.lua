-- name: rwlock/force_release
-- version: 2
-- summary: Delete a read-write lock in the given mode whoever holds it, with its reads' timeout keys; publish.
-- redisson: RedissonReadLock.forceUnlockAsync (mode read: del, publish 0) / RedissonWriteLock (write: publish 1)
-- time: none
-- KEYS[1]: lock - the lock hash; field mode -> read|write, <owner> -> reads, <owner>:write -> writes
-- KEYS[2]: channel - read-write lock channel redisson_rwlock:{lock}
-- KEYS[3]: prefix - {lock} (lock if it has a '{'); the script derives <prefix>:<owner>:rwlock_timeout:<n>, same slot
-- ARGV[1]: mode - which lock to delete: read, write, or any
-- ARGV[2]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 1: the lock was in that mode: hash and timeout keys deleted; published 0 (was read) or 1 (was write)
-- return 0: there is no lock, or it is in the other mode; nothing changed
-- error RLK_BADARG: not exactly 3 keys and 2 arguments, mode not read/write/any, or prefix not the lock's prefix
-- error RLK_WRONGTYPE: the lock key is not a hash with mode read or write
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

-- Redisson's prefix of the per-read timeout keys: the hash tag of the lock's slot.
--- @include "lib/timeout_prefix"

-- 'none', 'read' or 'write'; nil and the reason when the key is not a read-write lock.
--- @include "lib/rw_mode"

--- @include "lib/publish_cmd"

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

if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 2 arguments')
end
local lock, channel, prefix, which = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local publish, bad_publish = publish_cmd(ARGV[2])
if not publish then return bad_publish end
if prefix ~= timeout_prefix(lock) then
  return redis.error_reply('RLK_BADARG prefix must be ' .. timeout_prefix(lock))
end
if which ~= 'read' and which ~= 'write' and which ~= 'any' then
  return redis.error_reply('RLK_BADARG mode must be read, write or any')
end
local mode, why = rw_mode(lock)
if not mode then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

if mode == 'none' or (which ~= 'any' and which ~= mode) then
  return 0
end
delete_reads(lock, prefix)
redis.call('del', lock)
if mode == 'read' then
  redis.call(publish, channel, '0')
else
  redis.call(publish, channel, '1')
end
return 1
