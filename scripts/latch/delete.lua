-- name: latch/delete
-- version: 3
-- summary: Delete a count-down latch (it reads as open, count 0) and wake every waiter.
-- redisson: RedissonCountDownLatch.deleteAsync (del == 1 -> publish 1, 1; else 0)
-- time: none
-- KEYS[1]: latch - a string key holding the remaining count; no key means count 0 (open)
-- KEYS[2]: channel - latch channel redisson_countdownlatch__channel__{name}
-- ARGV[1]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 1: the key was deleted; message 0 (zero reached) published on channel
-- return 0: there was no key; nothing changed, nothing published
-- error RLK_BADARG: not exactly 2 keys and 1 argument
-- error RLK_WRONGTYPE: the latch key holds a non-string, or a string that is not an integer in +-(2^53-1)
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

-- The count a latch key holds (nil when there is no key), or nil and an error reply: a key
-- that is not a latch's count (an application's string) is not deleted.
--- @include "lib/load_latch_count"

--- @include "lib/publish_cmd"

if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 1 argument')
end
local latch, channel = KEYS[1], KEYS[2]
local publish, bad_publish = publish_cmd(ARGV[1])
if not publish then return bad_publish end
local count, err = load_latch_count(latch)
if err then return err end

if count == nil then
  return 0
end
redis.call('del', latch)
redis.call(publish, channel, '0')
return 1
