-- name: fastmulti/renew
-- version: 2
-- summary: Renew every value of a faster MultiLock group that owner holds (the watchdog).
-- redisson: FastMultilockTask.renew (1 renewed; 0 the group or one of the values is not owner's)
-- time: server - "now" decides which of owner's holds are still live and sets their new expire_time
-- KEYS[1]: group - the group hash: <value> -> holder; <value>:<holder>:expire_time (ms), :lock_count
-- ARGV[1]: lease_ms - new lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- return 1: owner holds at least one value whose expire_time has not passed: each such kept to now + lease_ms at least
-- return 0: owner holds no live value in the group; nothing changed
-- error RLK_BADARG: not exactly 1 key and 2 arguments
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the group key holds a value that is not a hash
-- end

--- @include "lib/is_lease"

--- @include "lib/now_ms"

--- @include "lib/fm_type"

if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 1 key and 2 arguments')
end
local group, lease_ms, owner = KEYS[1], ARGV[1], ARGV[2]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
local wrong = fm_type(group)
if wrong then return wrong end

-- The registry keeps one entry per (group, owner), so the watchdog renews what owner holds in
-- the group rather than a list of values: every field without ':' whose holder is owner.
local now = now_ms()
local until_ms = now + tonumber(lease_ms)
local flat = redis.call('hgetall', group)
local renew = {}
for i = 1, #flat, 2 do
  local f, holder = flat[i], flat[i + 1]
  if holder == owner and not f:find(':', 1, true) then
    local exp_field = f .. ':' .. owner .. ':expire_time'
    local exp = tonumber(redis.call('hget', group, exp_field))
    if exp and exp >= now then renew[#renew + 1] = { exp_field, exp } end
  end
end
if #renew == 0 then
  return 0
end
for i = 1, #renew do
  if renew[i][2] < until_ms then redis.call('hset', group, renew[i][1], until_ms) end
end
-- The hash's TTL only rises (GT): never cut, and a group without a TTL keeps none.
redis.call('pexpire', group, lease_ms, 'gt')
return 1
