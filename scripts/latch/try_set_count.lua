-- name: latch/try_set_count
-- version: 4
-- summary: Arm a count-down latch with count, only if it is not armed (its key is missing).
-- redisson: RedissonCountDownLatch.trySetCountAsync (exists == 0 -> set, publish 1, 1; else 0)
-- time: none
-- KEYS[1]: latch - a string key holding the remaining count; no key means count 0 (open)
-- KEYS[2]: channel - latch channel redisson_countdownlatch__channel__{name}
-- ARGV[1]: count - the count to start from, integer 1..1000000000000
-- ARGV[2]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 1: the key was missing and now holds count; message 1 (new count) published on channel
-- return 0: the latch is armed already; nothing changed
-- error RLK_BADARG: not exactly 2 keys and 2 arguments, or count is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: the latch key is not a string holding a count (lib/count_shape)
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

--- @include "lib/publish_cmd"

--- @include "lib/count_shape"

local function is_latch_count(s)
  return #s <= 13 and s:find('^[1-9][0-9]*$') ~= nil and tonumber(s) <= 1e12
end

if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 2 arguments')
end
local latch, channel, count = KEYS[1], KEYS[2], ARGV[1]
local publish, bad_publish = publish_cmd(ARGV[2])
if not publish then return bad_publish end
if not is_latch_count(count) then
  return redis.error_reply('RLK_BADARG count must be an integer in 1..1000000000000')
end
local why = count_shape(latch, 'latch')
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

if redis.call('exists', latch) == 1 then
  return 0
end
redis.call('set', latch, count)
redis.call(publish, channel, '1')
return 1
