-- name: rwlock/renew_readers
-- version: 3
-- summary: Renew the reads of several owners of one read-write lock (the watchdog); other owners' reads untouched.
-- redisson: RedissonReadLock.renewExpirationAsync (pexpire the hash and every read's timeout key)
-- time: none
-- KEYS[1]: lock - the lock hash; field mode -> read|write, <owner> -> reads, <owner>:write -> writes
-- KEYS[2]: prefix - {lock} (lock if it has a '{'); the script derives <prefix>:<owner>:rwlock_timeout:<n>, same slot
-- ARGV[1]: lease_ms - each renewed read's TTL is at least this afterwards (never cut), integer 1..1000000000000
-- ARGV[2..n]: owners - holder ids whose reads to renew; each 1..1024 bytes, not 'mode', not ending in ':write'
-- return array: per owner in ARGV order: 1 every read renewed, 0 no read held or one had expired (lost)
-- error RLK_BADARG: not exactly 2 keys and at least 2 arguments, or prefix is not the lock's timeout-key prefix
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: an owner is empty, longer than 1024 bytes, 'mode', or ends in ':write'
-- error RLK_WRONGTYPE: the lock key is not a hash with mode read or write
-- end

--- @include "lib/is_lease"

--- @include "lib/is_owner"

-- Redisson's prefix of the per-read timeout keys: the hash tag of the lock's slot.
--- @include "lib/timeout_prefix"

-- 'none', 'read' or 'write'; nil and the reason when the key is not a read-write lock.
--- @include "lib/rw_mode"

-- Renews the timeout keys of owner's reads: GT, so a read's longer TTL is never cut (the holder
-- id may be shared by processes whose leases differ). Returns how many are live (raised, or
-- longer already) and how many it counts.
local function renew_owner(lock, prefix, owner, lease_ms)
  local count = tonumber(redis.call('hget', lock, owner)) or 0
  local renewed = 0
  for n = 1, count do
    local key = prefix .. ':' .. owner .. ':rwlock_timeout:' .. n
    local set = redis.call('pexpire', key, lease_ms, 'gt')
    if set == 0 then set = redis.call('exists', key) end   -- 0: gone, or kept its longer TTL
    renewed = renewed + set
  end
  return renewed, count
end

if #KEYS ~= 2 or #ARGV < 2 then
  return redis.error_reply('RLK_BADARG expected 2 keys and a lease plus 1 or more owners')
end
local lock, prefix, lease_ms = KEYS[1], KEYS[2], ARGV[1]
if prefix ~= timeout_prefix(lock) then
  return redis.error_reply('RLK_BADARG prefix must be ' .. timeout_prefix(lock))
end
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
for i = 2, #ARGV do
  if not is_owner(ARGV[i]) then
    return redis.error_reply('RLK_BADOWNER owner ' .. (i - 1)
      .. " must be 1..1024 bytes, not 'mode', not ending in ':write'")
  end
end
local mode, why = rw_mode(lock)
if not mode then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

local result, any = {}, false
for i = 2, #ARGV do
  result[i - 1] = 0
  if mode ~= 'none' then
    local renewed, count = renew_owner(lock, prefix, ARGV[i], lease_ms)
    if renewed > 0 then any = true end
    if count > 0 and renewed == count then result[i - 1] = 1 end
  end
end
if any then
  redis.call('pexpire', lock, lease_ms, 'gt')
end
return result
