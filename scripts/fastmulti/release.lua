-- name: fastmulti/release
-- version: 2
-- summary: Release owner's hold of every value of a faster MultiLock group, all or none; publish unlock.
-- redisson: RedissonFasterMultiLock.unlockInnerAsync (nil not held; 1 all deleted; 0 some counted)
-- time: server - "now" decides whether owner's expire_time passed (then it holds nothing); extends the rest
-- KEYS[1]: group - the group hash: <value> -> holder; <value>:<holder>:expire_time (ms), :lock_count
-- KEYS[2]: channel - unlock channel redisson_lock__channel:{group}
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[2]: lease_ms - lease in milliseconds set on the values owner still holds afterwards, integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- ARGV[4..n]: values - the values to release: field names, each 1..1024 bytes without ':', none twice
-- return nil: owner does not hold one of the values (or its expire_time passed); nothing changed
-- return 0: every lock_count went down by one; some values still held (re-entered), kept to now + lease_ms at least
-- return 1: every lock_count reached 0: owner's fields of them deleted, message 0 (unlock) published on channel
-- error RLK_BADARG: not exactly 2 keys, or fewer than 4 arguments
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- error RLK_BADVALUE: a value is empty, longer than 1024 bytes, contains ':' or is given twice
-- error RLK_WRONGTYPE: the group key holds a value that is not a hash
-- end

--- @include "lib/is_lease"

--- @include "lib/now_ms"

--- @include "lib/publish_cmd"

--- @include "lib/fm_values"

--- @include "lib/fm_type"

if #KEYS ~= 2 or #ARGV < 4 then
  return redis.error_reply('RLK_BADARG expected 2 keys and at least 4 arguments')
end
local group, channel, owner, lease_ms = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
local values, bad = fm_values(4)
if not values then return bad end
local wrong = fm_type(group)
if wrong then return wrong end

local now = now_ms()
-- Every check before the first write (Redisson's script decrements the values before the one it
-- finds not held, then replies nil: rlk changes nothing).
for i = 1, #values do
  local v = values[i]
  if redis.call('hget', group, v) ~= owner then return nil end
  local exp = tonumber(redis.call('hget', group, v .. ':' .. owner .. ':expire_time'))
  if not exp or exp < now then return nil end
end

local until_ms = now + tonumber(lease_ms)
local deleted, all = false, true
for i = 1, #values do
  local v = values[i]
  local exp_field = v .. ':' .. owner .. ':expire_time'
  local count_field = v .. ':' .. owner .. ':lock_count'
  if redis.call('hincrby', group, count_field, -1) <= 0 then
    redis.call('hdel', group, v, exp_field, count_field)
    deleted = true
  else
    if tonumber(redis.call('hget', group, exp_field)) < until_ms then
      redis.call('hset', group, exp_field, until_ms)
    end
    all = false
  end
end
-- The hash's TTL only rises (GT): never cut, and a group without a TTL keeps none.
if not all then
  redis.call('pexpire', group, lease_ms, 'gt')
end
-- The message last: when it is refused (an ACL without PUBLISH), the release is done all the same.
if deleted then
  redis.call(publish, channel, '0')
end
if all then
  return 1
end
return 0
