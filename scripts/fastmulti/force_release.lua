-- name: fastmulti/force_release
-- version: 2
-- summary: Release the given values of a faster MultiLock group whoever holds them; publish unlock.
-- redisson: RedissonFasterMultiLock.forceUnlockAsync (hdel of each value and its holder's fields; publish 0)
-- time: none
-- KEYS[1]: group - the group hash: <value> -> holder; <value>:<holder>:expire_time (ms), :lock_count
-- KEYS[2]: channel - unlock channel redisson_lock__channel:{group}
-- ARGV[1]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- ARGV[2..n]: values - the values to release: field names, each 1..1024 bytes without ':', none twice
-- return 1: a value had a holder: each value and its holder's fields deleted, message 0 published on channel
-- return 0: none of the values had a holder; nothing changed, nothing published
-- error RLK_BADARG: not exactly 2 keys, or fewer than 2 arguments
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- error RLK_BADVALUE: a value is empty, longer than 1024 bytes, contains ':' or is given twice
-- error RLK_WRONGTYPE: the group key holds a value that is not a hash, or a hash not a group's (lib/fm_shape)
-- end

--- @include "lib/publish_cmd"

--- @include "lib/fm_values"

--- @include "lib/fm_type"

--- @include "lib/fm_shape"

if #KEYS ~= 2 or #ARGV < 2 then
  return redis.error_reply('RLK_BADARG expected 2 keys and at least 2 arguments')
end
local group, channel = KEYS[1], KEYS[2]
local publish, bad_publish = publish_cmd(ARGV[1])
if not publish then return bad_publish end
local values, bad = fm_values(2)
if not values then return bad end
local wrong = fm_type(group)
if wrong then return wrong end
-- A destructive action: the shape is read every time (a key rlk does not own stays as it is).
wrong = redis.call('exists', group) == 1 and fm_shape(group)
if wrong then return wrong end

local removed = 0
for i = 1, #values do
  local v = values[i]
  local holder = redis.call('hget', group, v)
  if holder then
    redis.call('hdel', group, v, v .. ':' .. holder .. ':expire_time', v .. ':' .. holder .. ':lock_count')
    removed = removed + 1
  end
end
if removed == 0 then
  return 0
end
redis.call(publish, channel, '0')
return 1
