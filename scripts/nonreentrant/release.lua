-- name: nonreentrant/release
-- version: 2
-- summary: Release a non-reentrant lock: delete it and publish the unlock message.
-- redisson: RedissonLock.unlockInnerAsync (hincrby -1; pexpire while held, else del + publish 0)
-- time: none
-- KEYS[1]: lock - the lock hash; field <owner> -> 1 (the reentrant lock's layout)
-- KEYS[2]: channel - unlock channel redisson_lock__channel:{name}
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[2]: lease_ms - while the owner still holds it, its TTL is at least this (never cut), integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return nil: owner does not hold the lock (or there is no lock); nothing changed
-- return 0: still held by owner (its count was above 1): count decremented, TTL raised to lease_ms if shorter
-- return 1: released: the lock key deleted and message 0 (unlock) published on channel
-- error RLK_BADARG: not exactly 2 keys and 3 arguments
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: the lock key holds a value that is not a hash
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

--- @include "lib/is_lease"

--- @include "lib/publish_cmd"

if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 3 arguments')
end
local lock, channel, owner, lease_ms = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
local mine = redis.pcall('hexists', lock, owner)
if type(mine) == 'table' then
  return redis.error_reply('RLK_WRONGTYPE lock key holds a ' .. redis.call('type', lock).ok
    .. ', not a hash')
end
if mine == 0 then
  return nil
end
if redis.call('hincrby', lock, owner, -1) > 0 then
  -- Still held (a reentrant hold of the same holder id counted on it): the TTL is never cut
  -- (GT; a hold without a TTL keeps none), as reentrant/release.
  redis.call('pexpire', lock, lease_ms, 'gt')
  return 0
end
redis.call('del', lock)
redis.call(publish, channel, '0')
return 1
