-- name: rwlock/renew_writer
-- version: 3
-- summary: Renew the write lock the owner holds (the watchdog): raise the hash TTL to at least lease_ms.
-- redisson: RedissonBaseLock.renewExpirationAsync with <owner>:write (hexists -> pexpire, 1; else 0)
-- time: none
-- KEYS[1]: lock - the lock hash; field mode -> read|write, <owner> -> reads, <owner>:write -> writes
-- ARGV[1]: lease_ms - new lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes, not 'mode', not ending in ':write'
-- return 1: owner holds the write lock; the hash TTL is now at least lease_ms (none: kept none)
-- return 0: owner does not hold the write lock (or there is no lock); nothing changed
-- error RLK_BADARG: not exactly 1 key and 2 arguments
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty, longer than 1024 bytes, 'mode', or ends in ':write'
-- error RLK_WRONGTYPE: the lock key is not a hash with mode read or write
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

if mode ~= 'write' or redis.call('hexists', lock, owner .. ':write') == 0 then
  return 0
end
-- GT: a renewal never cuts the TTL (a holder id may be shared); a hold without a TTL keeps none.
redis.call('pexpire', lock, lease_ms, 'gt')
return 1
