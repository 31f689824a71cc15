-- name: fastmulti/acquire
-- version: 3
-- summary: Take every value of a faster MultiLock group for owner, all or none, in one call.
-- redisson: RedissonFasterMultiLock.tryLockInnerAsync (nil acquired; else max expire_time - now of the other holders)
-- time: server - "now" decides which other holders' expire_time has passed (free) and sets the new ones
-- KEYS[1]: group - the group hash: <value> -> holder; <value>:<holder>:expire_time (ms), :lock_count
-- ARGV[1]: lease_ms - lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[3..n]: values - the values to take: field names, each 1..1024 bytes without ':', none twice
-- return nil: acquired: every value is owner's, its expire_time at least now + lease_ms, its lock_count one more
-- return integer: not acquired, nothing changed: ms until the latest expire_time of the values other holders hold
-- error RLK_BADARG: not exactly 1 key, or fewer than 3 arguments
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_BADVALUE: a value is empty, longer than 1024 bytes, contains ':' or is given twice
-- error RLK_WRONGTYPE: the group key holds a value that is not a hash, or not a group's (lib/fm_shape)
-- end

--- @include "lib/is_lease"

--- @include "lib/now_ms"

--- @include "lib/fm_values"

--- @include "lib/fm_type"

--- @include "lib/fm_shape"

if #KEYS ~= 1 or #ARGV < 3 then
  return redis.error_reply('RLK_BADARG expected 1 key and at least 3 arguments')
end
local group, lease_ms, owner = KEYS[1], ARGV[1], ARGV[2]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
local values, bad = fm_values(3)
if not values then return bad end
local wrong = fm_type(group)
if wrong then return wrong end

local now = now_ms()
local lease = tonumber(lease_ms)
local existed = redis.call('exists', group) == 1
-- Acquire writes into a hash that exists: its shape is read when it has no TTL (a live group has
-- one), fewer than 3 fields (a held value has 3) or a mode field (a read-write lock's).
if existed and (redis.call('pttl', group) == -1 or redis.call('hlen', group) < 3
    or redis.call('hexists', group, 'mode') == 1) then
  wrong = fm_shape(group)
  if wrong then return wrong end
end
-- Every check before the first write: another holder whose expire_time has not passed refuses
-- the whole call. A holder whose time has passed holds nothing (Redisson's rule).
local latest = -1
local holders = {}
if existed then
  for i = 1, #values do
    local holder = redis.call('hget', group, values[i])
    holders[i] = holder
    if holder and holder ~= owner then
      local exp = tonumber(redis.call('hget', group, values[i] .. ':' .. holder .. ':expire_time'))
      if exp and exp > now and exp > latest then latest = exp end
    end
  end
end
if latest ~= -1 then
  return latest - now
end

local until_ms = now + lease
for i = 1, #values do
  local v, holder = values[i], holders[i]
  local exp_field = v .. ':' .. owner .. ':expire_time'
  local count_field = v .. ':' .. owner .. ':lock_count'
  if holder and holder ~= owner then
    -- a lapsed holder's own fields go with it (Redisson leaves them behind)
    redis.call('hdel', group, v .. ':' .. holder .. ':expire_time', v .. ':' .. holder .. ':lock_count')
  end
  local exp = tonumber(redis.call('hget', group, exp_field))
  if holder == owner and exp and exp >= now then
    -- a re-entry: one more
    if exp < until_ms then redis.call('hset', group, exp_field, until_ms) end
    redis.call('hincrby', group, count_field, 1)
  else
    -- a new hold (or the owner's own lapsed one, which counts from 1 again)
    redis.call('hset', group, v, owner, exp_field, until_ms, count_field, 1)
  end
end
-- The hash lives at least as long as the longest hold in it. A TTL of 0 (under 1 ms left: the
-- previous holders' time ran out this very moment) is raised too; Redisson's script skips it, and
-- the hash with the new hold in it expires a moment later. A hash without TTL keeps none.
if existed then
  redis.call('pexpire', group, lease_ms, 'gt')
else
  redis.call('pexpire', group, lease_ms)
end
return nil
