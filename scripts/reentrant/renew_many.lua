-- name: reentrant/renew_many
-- version: 5
-- summary: Renew many reentrant locks in one call (the watchdog); in a cluster the caller groups keys by slot.
-- redisson: RedissonBaseLock.renewExpirationAsync, once per lock
-- time: none
-- KEYS[1..n]: locks - lock hashes to renew, in one hash slot; a lock with a lock-delay may be followed by its delay key
-- ARGV[1]: lease_ms - new lease in milliseconds for every lock, integer 1..1000000000000
-- ARGV[2..n]: owners - one for all keys, or one per key in KEYS order (1..1024 bytes; '': the key is a delay key)
-- return array: one entry per lock (none per delay key) in KEYS order: 1 renewed (TTL >= lease_ms), 0 not held by it
-- error RLK_BADARG: no keys, or neither 1 owner nor one owner per key
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: an owner is empty (its key not the delay key of the lock before it) or longer than 1024 bytes
-- error RLK_WRONGTYPE: a lock key holds a value that is not a hash
-- end

--- @include "lib/is_lease"
--- @include "lib/renew_delay"

-- Lock-delay: a lock's delay key ({lock}:rlk_delay, or lock:rlk_delay for a name with a hash tag)
-- comes right after the lock, with '' for its owner (one owner per key); when the lock is
-- renewed, the delay key's PX becomes the lock's PTTL + its value (lib/renew_delay). An empty owner
-- anywhere else is refused as it always was.
local n = #KEYS
if n < 1 or (#ARGV ~= 2 and #ARGV ~= n + 1) then
  return redis.error_reply('RLK_BADARG expected n >= 1 keys and 1 + (1 or n) arguments')
end
local lease_ms = ARGV[1]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
local one_owner = #ARGV == 2
-- The locks, their owners and their delay keys (delays[j]: lock j's, or nil).
local locks, owners, delays = {}, {}, {}
for i = 1, n do
  local owner = one_owner and ARGV[2] or ARGV[i + 1]
  local m, prev = #locks, KEYS[i - 1]
  if owner == '' and not one_owner and m > 0 and prev == locks[m] and not delays[m]
      and (KEYS[i] == '{' .. prev .. '}:rlk_delay' or KEYS[i] == prev .. ':rlk_delay') then
    delays[m] = KEYS[i]
  elseif #owner < 1 or #owner > 1024 then
    return redis.error_reply('RLK_BADOWNER owner ' .. i .. ' must be 1..1024 bytes')
  else
    locks[m + 1], owners[m + 1] = KEYS[i], owner
  end
end
local kinds = {}
for j = 1, #locks do
  kinds[j] = redis.call('type', locks[j]).ok
  if kinds[j] ~= 'none' and kinds[j] ~= 'hash' then
    return redis.error_reply('RLK_WRONGTYPE lock key ' .. j .. ' holds a ' .. kinds[j] .. ', not a hash')
  end
end

-- GT: a renewal never cuts a TTL (a holder id may be shared, another process may count on a
-- longer fixed lease); a hold without a TTL keeps none.
local renewed = {}
for j = 1, #locks do
  renewed[j] = 0
  if kinds[j] == 'hash' and redis.call('hexists', locks[j], owners[j]) == 1 then
    redis.call('pexpire', locks[j], lease_ms, 'gt')
    if delays[j] then
      renew_delay(delays[j], locks[j])
    end
    renewed[j] = 1
  end
end
return renewed
