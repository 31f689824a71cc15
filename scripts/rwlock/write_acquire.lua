-- name: rwlock/write_acquire
-- version: 2
-- summary: Take or re-enter the write lock of a read-write lock; refuses an upgrade from a read the owner holds.
-- redisson: RedissonWriteLock.tryLockInnerAsync (hset mode write + <owner>:write; pttl when held)
-- time: none
-- KEYS[1]: lock - the lock hash; field mode -> read|write, <owner> -> reads, <owner>:write -> writes
-- ARGV[1]: lease_ms - lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes, not 'mode', not ending in ':write'
-- return nil: acquired (mode write, <owner>:write 1, TTL lease_ms) or re-entered (count + 1, TTL >= lease_ms)
-- return integer: not acquired: readers or another writer hold it; the lock's PTTL in ms (-1 if it has none)
-- error RLK_BADARG: not exactly 1 key and 2 arguments
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty, longer than 1024 bytes, 'mode', or ends in ':write'
-- error RLK_WRONGTYPE: the lock key is not a hash with mode read or write
-- error RLK_UPGRADE: the lock is in read mode and owner holds one of the reads; waiting could never succeed
-- end

--- @include "lib/is_lease"

--- @include "lib/is_owner"

-- 'none', 'read' or 'write'; nil and the reason when the key is not a read-write lock.
--- @include "lib/rw_mode"

if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 1 key and 2 arguments')
end
local lock, lease_ms, owner = KEYS[1], ARGV[1], ARGV[2]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if not is_owner(owner) then
  return redis.error_reply("RLK_BADOWNER owner must be 1..1024 bytes, not 'mode', not ending in ':write'")
end
local mode, why = rw_mode(lock)
if not mode then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

local writer = owner .. ':write'
if mode == 'none' then
  redis.call('hset', lock, 'mode', 'write', writer, '1')
  redis.call('pexpire', lock, lease_ms)
  return nil
end
if mode == 'write' and redis.call('hexists', lock, writer) == 1 then
  redis.call('hincrby', lock, writer, 1)
  if redis.call('pttl', lock) < tonumber(lease_ms) then
    redis.call('pexpire', lock, lease_ms)
  end
  return nil
end
if mode == 'read' and redis.call('hexists', lock, owner) == 1 then
  return redis.error_reply('RLK_UPGRADE owner holds a read of this lock; release its reads before writing')
end
return redis.call('pttl', lock)
