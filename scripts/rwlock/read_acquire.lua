-- name: rwlock/read_acquire
-- version: 5
-- summary: Take or re-enter the read lock of a read-write lock (the writer may too); not a lock reserved for a writer.
-- redisson: RedissonReadLock.tryLockInnerAsync (hincrby + timeout key <n>; pttl when another writes); grant: rlk's
-- time: none
-- KEYS[1]: lock - the lock hash; field mode -> read|write, <owner> -> reads, <owner>:write -> writes
-- KEYS[2]: prefix - {lock} (lock if it has a '{'); the script derives <prefix>:<owner>:rwlock_timeout:<n>, same slot
-- KEYS[3]: grant - string {lock}:rlk_next: the writer's ticket the free lock is reserved for, PX claim window
-- ARGV[1]: lease_ms - lease in milliseconds of this read, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes, not 'mode', not ending in ':write'
-- return nil: acquired: read count n + 1, key <prefix>:<owner>:rwlock_timeout:<n+1> set, hash TTL >= lease_ms (or none)
-- return integer: not acquired: another owner writes: the lock's PTTL (-1: none)
-- return array: {grant PTTL, 0}: not acquired; the free lock is reserved for a writer: wait out its claim window
-- error RLK_BADARG: not exactly 3 keys and 2 arguments, or prefix is not the lock's timeout-key prefix
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty, longer than 1024 bytes, 'mode', or ends in ':write'
-- error RLK_WRONGTYPE: lock key not a read-write lock's (lib/rw_shape when no TTL), timeout or grant not a string
-- end

--- @include "lib/is_lease"

--- @include "lib/is_owner"

-- Redisson's prefix of the per-read timeout keys: the hash tag of the lock's slot.
--- @include "lib/timeout_prefix"

-- 'none', 'read' or 'write'; nil and the reason when the key is not a read-write lock.
--- @include "lib/rw_mode"

--- @include "lib/rw_shape"

if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 2 arguments')
end
local lock, prefix, grant, lease_ms, owner = KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2]
if prefix ~= timeout_prefix(lock) then
  return redis.error_reply('RLK_BADARG prefix must be ' .. timeout_prefix(lock))
end
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

-- Not the caller's and no TTL (a live lock always has one): a key rlk does not own? An
-- application's hash that happens to hold a mode field is neither joined nor waited on for ever
-- (lib/rw_shape); a hash with a TTL, or the caller's, reads no shape.
local function foreign()
  local found = rw_shape(lock)
  return found and redis.error_reply('RLK_WRONGTYPE lock key holds ' .. found)
end
local count
if mode == 'write' then
  if redis.call('hexists', lock, owner .. ':write') == 0 then
    local ttl = redis.call('pttl', lock)
    return ttl == -1 and foreign() or ttl
  end
  count = redis.call('hget', lock, owner)
elseif mode == 'read' then
  count = redis.call('hget', lock, owner)
  if not count and redis.call('pttl', lock) == -1 then
    local bad = foreign()
    if bad then return bad end
  end
end
if mode == 'none' then
  -- A release reserved the free lock for the first waiting writer: readers wait until it has
  -- claimed it (and released it: its 1) or its claim window ran out. An array, not the bare
  -- PTTL a holder's lock gives: the claim publishes nothing, so a wait that runs out on this
  -- bound is no sign of a dead holder or a lost message (-1: a grant key without TTL).
  local reserved = redis.pcall('get', grant)
  if type(reserved) == 'table' then
    return redis.error_reply('RLK_WRONGTYPE grant key holds a ' .. redis.call('type', grant).ok
      .. ', not a string')
  end
  if reserved then
    return {redis.call('pttl', grant), 0}
  end
end
local n = (tonumber(count) or 0) + 1
local timeout_key = prefix .. ':' .. owner .. ':rwlock_timeout:' .. n
local kind = redis.call('type', timeout_key).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('RLK_WRONGTYPE timeout key holds a ' .. kind .. ', not a string')
end

redis.call('hincrby', lock, owner, 1)
redis.call('set', timeout_key, '1', 'px', lease_ms)
if mode == 'none' then
  redis.call('hset', lock, 'mode', 'read')
  redis.call('pexpire', lock, lease_ms)
else
  -- The hash's TTL only rises (GT; a hold without a TTL keeps none): a read never shortens the
  -- others' holds, nor its own holder's under a shared id.
  redis.call('pexpire', lock, lease_ms, 'gt')
end
return nil
