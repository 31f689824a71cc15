-- name: rwlock/read_release
-- version: 3
-- summary: Leave a read lock once; in read mode reset the hash TTL to the longest live read, or delete and publish.
-- redisson: RedissonReadLock.unlockInnerAsync (hincrby -1, del timeout key, pexpire max pttl; else del + publish 0)
-- time: none
-- KEYS[1]: lock - the lock hash; field mode -> read|write, <owner> -> reads, <owner>:write -> writes
-- KEYS[2]: channel - read-write lock channel redisson_rwlock:{lock}
-- KEYS[3]: prefix - {lock} (lock if it has a '{'); the script derives <prefix>:<owner>:rwlock_timeout:<n>, same slot
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes, not 'mode', not ending in ':write'
-- ARGV[2]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return nil: owner holds no read of the lock (or there is no lock); nothing changed
-- return 0: one read left (its timeout key deleted); still held; in read mode hash TTL = longest live read (>= 1 ms)
-- return 1: the last live read left in read mode: lock hash deleted and message 0 (unlock) published on channel
-- error RLK_BADARG: not exactly 3 keys and 2 arguments, or prefix is not the lock's timeout-key prefix
-- error RLK_BADOWNER: owner is empty, longer than 1024 bytes, 'mode', or ends in ':write'
-- error RLK_WRONGTYPE: the lock key is not a hash with mode read or write
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

--- @include "lib/is_owner"

-- Redisson's prefix of the per-read timeout keys: the hash tag of the lock's slot.
--- @include "lib/timeout_prefix"

-- 'none', 'read' or 'write'; nil and the reason when the key is not a read-write lock.
--- @include "lib/rw_mode"

--- @include "lib/publish_cmd"

-- The longest PTTL among the timeout keys of every read still counted in the hash (< 0: none live;
-- 0: a read in its last millisecond, which Redis keeps until its clock passes the expire time).
local function longest_read(lock, prefix)
  local longest = -2
  local flat = redis.call('hgetall', lock)
  for i = 1, #flat, 2 do
    local field, count = flat[i], tonumber(flat[i + 1])
    if field ~= 'mode' and field:sub(-6) ~= ':write' and count then
      for n = count, 1, -1 do
        longest = math.max(longest, redis.call('pttl', prefix .. ':' .. field .. ':rwlock_timeout:' .. n))
      end
    end
  end
  return longest
end

if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 2 arguments')
end
local lock, channel, prefix, owner = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local publish, bad_publish = publish_cmd(ARGV[2])
if not publish then return bad_publish end
if prefix ~= timeout_prefix(lock) then
  return redis.error_reply('RLK_BADARG prefix must be ' .. timeout_prefix(lock))
end
if not is_owner(owner) then
  return redis.error_reply("RLK_BADOWNER owner must be 1..1024 bytes, not 'mode', not ending in ':write'")
end
local mode, why = rw_mode(lock)
if not mode then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

if mode == 'none' or redis.call('hexists', lock, owner) == 0 then
  return nil
end
local left = redis.call('hincrby', lock, owner, -1)
if left <= 0 then
  redis.call('hdel', lock, owner)
end
redis.call('del', prefix .. ':' .. owner .. ':rwlock_timeout:' .. (left + 1))
if mode == 'write' then
  return 0
end
local longest = longest_read(lock, prefix)
if longest >= 0 then
  -- PEXPIRE 0 would delete the hash while that read's key still exists: keep it 1 ms instead
  redis.call('pexpire', lock, math.max(longest, 1))
  return 0
end
redis.call('del', lock)
redis.call(publish, channel, '0')
return 1
