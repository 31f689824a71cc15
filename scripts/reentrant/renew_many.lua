-- name: reentrant/renew_many
-- version: 2
-- summary: Renew many reentrant locks in one call (the watchdog); in a cluster the caller groups keys by slot.
-- redisson: RedissonBaseLock.renewExpirationAsync, once per lock
-- time: none
-- KEYS[1..n]: locks - lock hashes to renew; all in one hash slot
-- ARGV[1]: lease_ms - new lease in milliseconds for every lock, integer 1..1000000000000
-- ARGV[2..n]: owners - one owner id for all keys, or one per key in KEYS order; each 1..1024 bytes
-- return array: one entry per key in KEYS order: 1 renewed (owner holds it), 0 not held by that owner
-- error RLK_BADARG: no keys, or neither 1 owner nor one owner per key
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: an owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: a lock key holds a value that is not a hash
-- end

--- @include "lib/is_lease"

local n = #KEYS
if n < 1 or (#ARGV ~= 2 and #ARGV ~= n + 1) then
  return redis.error_reply('RLK_BADARG expected n >= 1 keys and 1 + (1 or n) arguments')
end
local lease_ms = ARGV[1]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
local one_owner = #ARGV == 2
local owners = {}
for i = 1, n do
  if one_owner then owners[i] = ARGV[2] else owners[i] = ARGV[i + 1] end
  if #owners[i] < 1 or #owners[i] > 1024 then
    return redis.error_reply('RLK_BADOWNER owner ' .. i .. ' must be 1..1024 bytes')
  end
end
local kinds = {}
for i = 1, n do
  kinds[i] = redis.call('type', KEYS[i]).ok
  if kinds[i] ~= 'none' and kinds[i] ~= 'hash' then
    return redis.error_reply('RLK_WRONGTYPE lock key ' .. i .. ' holds a ' .. kinds[i] .. ', not a hash')
  end
end

local renewed = {}
for i = 1, n do
  renewed[i] = 0
  if kinds[i] == 'hash' and redis.call('hexists', KEYS[i], owners[i]) == 1 then
    redis.call('pexpire', KEYS[i], lease_ms)
    renewed[i] = 1
  end
end
return renewed
