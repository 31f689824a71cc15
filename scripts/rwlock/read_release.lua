-- name: rwlock/read_release
-- version: 5
-- summary: Leave a read lock once; in read mode TTL = the longest live read, or delete, grant to a writer, publish.
-- redisson: RedissonReadLock.unlockInnerAsync (hincrby -1, del timeout key, pexpire max pttl; else del, publish 0)
-- time: none
-- KEYS[1]: lock - the lock hash; field mode -> read|write, <owner> -> reads, <owner>:write -> writes
-- KEYS[2]: channel - read-write lock channel redisson_rwlock:{lock}
-- KEYS[3]: prefix - {lock} (lock if it has a '{'); the script derives <prefix>:<owner>:rwlock_timeout:<n>, same slot
-- KEYS[4]: waiters - list {lock}:rlk_waiters of waiting writers' tickets, first come first
-- KEYS[5]: grant - string {lock}:rlk_next: ticket the free lock is reserved for, PX claim window
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes, not 'mode', not ending in ':write'
-- ARGV[2]: claim_ms - how long the first waiting writer has to claim the lock, integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return nil: owner holds no read of the lock (or there is no lock); nothing changed
-- return 0: one read left (highest key deleted, its TTL kept by the next); still held; read mode: TTL = longest read
-- return 1: the last live read left in read mode: lock hash deleted, 0 (unlock) published on channel; no writer queued
-- return 2: the last live read left: deleted, reserved for the first writer; head*2^26 on its wake channel, then 0
-- error RLK_BADARG: not 5 keys and 3 arguments, prefix not the lock's timeout-key prefix, or claim_ms not 1..10^12
-- error RLK_BADOWNER: owner is empty, longer than 1024 bytes, 'mode', or ends in ':write'
-- error RLK_WRONGTYPE: the lock key is not a hash with mode read or write, or the waiters key not a list
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

--- @include "lib/is_lease"

--- @include "lib/is_owner"

-- Redisson's prefix of the per-read timeout keys: the hash tag of the lock's slot.
--- @include "lib/timeout_prefix"

-- 'none', 'read' or 'write'; nil and the reason when the key is not a read-write lock.
--- @include "lib/rw_mode"

--- @include "lib/publish_cmd"

-- Reserves the freed lock for the first waiter whose client still listens, and wakes it alone.
--- @include "lib/hand_over"

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

if #KEYS ~= 5 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 5 keys and 3 arguments')
end
local lock, channel, prefix, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, claim_ms = ARGV[1], ARGV[2]
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
if prefix ~= timeout_prefix(lock) then
  return redis.error_reply('RLK_BADARG prefix must be ' .. timeout_prefix(lock))
end
if not is_owner(owner) then
  return redis.error_reply("RLK_BADOWNER owner must be 1..1024 bytes, not 'mode', not ending in ':write'")
end
if not is_lease(claim_ms) then
  return redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
end
local mode, why = rw_mode(lock)
if not mode then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

if mode == 'none' or redis.call('hexists', lock, owner) == 0 then
  return nil
end
-- Writers queued, if this read is the last: read before the first write, so that a waiters key
-- of another type is refused with nothing changed.
local queued = 0
if mode == 'read' then
  queued = redis.pcall('llen', waiters)
  if type(queued) == 'table' then
    return redis.error_reply('RLK_WRONGTYPE waiters key holds a ' .. redis.call('type', waiters).ok
      .. ', not a list')
  end
end
local left = redis.call('hincrby', lock, owner, -1)
if left <= 0 then
  redis.call('hdel', lock, owner)
end
-- The reads of one holder id are counted, not told apart, and the highest key goes; but the id may
-- be shared by processes whose leases differ (a nested rlk lock), and the read that left may not
-- be the one whose key goes: the reads left keep the longest TTL (GT on the key below: a partial
-- release never shortens a hold).
local gone = prefix .. ':' .. owner .. ':rwlock_timeout:' .. (left + 1)
if left > 0 then
  local kept = redis.call('pttl', gone)
  if kept > 0 then
    redis.call('pexpire', prefix .. ':' .. owner .. ':rwlock_timeout:' .. left, kept, 'gt')
  end
end
redis.call('del', gone)
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
-- Nobody queued (the uncontended path): no call.
local granted = queued > 0 and hand_over(redis.call('lpop', waiters), waiters, grant, claim_ms,
                                          channel, publish)
redis.call(publish, channel, '0')
return granted and 2 or 1
