-- name: nonreentrant/acquire
-- version: 2
-- summary: Acquire a non-reentrant lock; a second acquire by the holder is refused, not counted.
-- redisson: RedissonNonReentrantLock.tryLockInnerAsync (exists -> hincrby + pexpire; own -> error; else pttl)
-- time: none
-- KEYS[1]: lock - the lock hash; field <owner> -> 1 (the reentrant lock's layout)
-- ARGV[1]: lease_ms - lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- return nil: acquired: the lock was free; field owner set to 1, lease lease_ms
-- return integer: not acquired; the holder's remaining time to live in ms (PTTL, -1 if it has none)
-- error RLK_BADARG: not exactly 1 key and 2 arguments
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the lock key is not a lock's (type, shape: lib/lock_shape)
-- error RLK_REENTRY: owner holds the lock already (Redisson: NON_REENTRANT_REACQUIRE); nothing changed
-- end

--- @include "lib/is_lease"

--- @include "lib/lock_shape"

if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 1 key and 2 arguments')
end
local lock, lease_ms, owner = KEYS[1], ARGV[1], ARGV[2]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
-- A free lock is created fresh (no type can be wrong on a key that does not exist). The reentrant
-- lock's reservation for a queued rlk waiter ({name}:rlk_next) is not looked at, as Redisson's
-- script does not: it orders waiters, it does not exclude holders (docs/locks/nonreentrant.md).
if redis.call('exists', lock) == 0 then
  redis.call('hset', lock, owner, '1')
  redis.call('pexpire', lock, lease_ms)
  return nil
end
local mine = redis.pcall('hexists', lock, owner)
if type(mine) == 'table' then
  return redis.error_reply('RLK_WRONGTYPE lock key holds a ' .. redis.call('type', lock).ok
    .. ', not a hash')
end
if mine == 1 then
  return redis.error_reply('RLK_REENTRY the lock is non-reentrant and owner holds it already')
end
local ttl = redis.call('pttl', lock)
-- Not the caller's and no TTL (a live lock always has one): a key rlk does not own?
if ttl == -1 then
  local found = lock_shape(lock)
  if found then
    return redis.error_reply('RLK_WRONGTYPE lock key holds ' .. found)
  end
end
return ttl
