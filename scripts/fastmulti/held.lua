-- name: fastmulti/held
-- version: 1
-- summary: How many of the given values of a faster MultiLock group are held (by owner, or by anyone).
-- redisson: RedissonFasterMultiLock.isLockedAsync / isHeldByThreadAsync (1/0)
-- time: server - "now" decides which holds' expire_time has passed (they hold nothing)
-- KEYS[1]: group - the group hash: <value> -> holder; <value>:<holder>:expire_time (ms), :lock_count
-- ARGV[1]: owner - holder id to count the values of, or empty for any holder
-- ARGV[2..n]: values - the values to look at: field names, each 1..1024 bytes without ':', none twice
-- return integer: the number of values held (by owner when given) whose expire_time has not passed
-- error RLK_BADARG: not exactly 1 key, or fewer than 2 arguments
-- error RLK_BADOWNER: owner is longer than 1024 bytes
-- error RLK_BADVALUE: a value is empty, longer than 1024 bytes, contains ':' or is given twice
-- error RLK_WRONGTYPE: the group key holds a value that is not a hash
-- end

--- @include "lib/now_ms"

--- @include "lib/fm_values"

--- @include "lib/fm_type"

if #KEYS ~= 1 or #ARGV < 2 then
  return redis.error_reply('RLK_BADARG expected 1 key and at least 2 arguments')
end
local group, owner = KEYS[1], ARGV[1]
if #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be at most 1024 bytes')
end
local values, bad = fm_values(2)
if not values then return bad end
local wrong = fm_type(group)
if wrong then return wrong end

local now = now_ms()
local n = 0
for i = 1, #values do
  local holder = redis.call('hget', group, values[i])
  if holder and (owner == '' or holder == owner) then
    local exp = tonumber(redis.call('hget', group, values[i] .. ':' .. holder .. ':expire_time'))
    if exp and exp >= now then n = n + 1 end
  end
end
return n
