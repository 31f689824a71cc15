-- name: reentrant/renew
-- version: 7
-- summary: Renew the lease of a reentrant lock the owner holds (watchdog renewal of one lock); never cut a TTL.
-- redisson: RedissonBaseLock.renewExpirationAsync (hexists -> pexpire, 1; else 0)
-- time: none
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: delay - optional (lock-delay): string {lock}:rlk_delay: its PX set to the lock's PTTL + its value
-- ARGV[1]: lease_ms - new lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[3]: first - optional: exactly first: one hold of owner (re-entered by nobody) gets lease_ms even if shorter
-- return 1: owner holds the lock; its TTL is now at least lease_ms (a longer one kept; none: none), or lease_ms (first)
-- return 0: owner does not hold the lock (or there is no lock); nothing changed
-- error RLK_BADARG: not 1 key (or 2) and 2 arguments (or 3, the third exactly first)
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the lock key holds a value that is not a hash
-- end

--- @include "lib/is_lease"
--- @include "lib/renew_delay"

if (#KEYS ~= 1 and #KEYS ~= 2) or (#ARGV ~= 2 and not (#ARGV == 3 and ARGV[3] == 'first')) then
  return redis.error_reply('RLK_BADARG expected 1 key and 2 arguments (lock-delay: 2 keys; a third, first)')
end
local lock, delay, lease_ms, owner = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
local kind = redis.call('type', lock).ok
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('RLK_WRONGTYPE lock key holds a ' .. kind .. ', not a hash')
end

-- GT: a renewal never cuts the TTL (the holder id may be shared, another process may count on a
-- longer fixed lease); a hold without a TTL keeps none. With first, a single hold is the
-- caller's alone and its lease is set as asked: a MultiLock's member, taken with a longer lease
-- while the others were awaited.
local count = kind == 'hash' and redis.call('hget', lock, owner)
if count then
  if ARGV[3] and count == '1' then
    redis.call('pexpire', lock, lease_ms)
  else
    redis.call('pexpire', lock, lease_ms, 'gt')
  end
  if delay then
    renew_delay(delay, lock)
  end
  return 1
end
return 0
