-- name: fastmulti/counts
-- version: 1
-- summary: Owner's live lock_count of each given value of a faster MultiLock group (a lost reply's read-back).
-- redisson: none
-- time: server - "now" decides which of owner's holds have lapsed (their expire_time passed: they hold nothing)
-- KEYS[1]: group - the group hash: <value> -> holder; <value>:<holder>:expire_time (ms), :lock_count
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[2..n]: values - the values to look at: field names, each 1..1024 bytes without ':', none twice
-- return array: per value, in order: owner's lock_count of it; 0: owner does not hold it live (free, lapsed, another's)
-- error RLK_BADARG: not exactly 1 key, or fewer than 2 arguments
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
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
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
local values, bad = fm_values(2)
if not values then return bad end
local wrong = fm_type(group)
if wrong then return wrong end

-- A hold is live while its expire_time has not passed (the acquire's and the release's rule).
local now = now_ms()
local counts = {}
for i = 1, #values do
  local v = values[i]
  local n = 0
  if redis.call('hget', group, v) == owner then
    local exp = tonumber(redis.call('hget', group, v .. ':' .. owner .. ':expire_time'))
    if exp and exp >= now then
      n = tonumber(redis.call('hget', group, v .. ':' .. owner .. ':lock_count')) or 0
    end
  end
  counts[i] = n
end
return counts
