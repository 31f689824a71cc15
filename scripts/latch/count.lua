-- name: latch/count
-- version: 2
-- summary: Read a count-down latch's remaining count (read-only).
-- redisson: RedissonCountDownLatch.getCountAsync (get)
-- time: none
-- KEYS[1]: latch - a string key holding the remaining count; no key means count 0 (open)
-- return integer: the remaining count; 0 when there is no key (the latch is open)
-- error RLK_BADARG: not exactly 1 key and no arguments
-- error RLK_WRONGTYPE: the latch key holds a non-string, or a string that is not an integer in +-(2^53-1)
-- end

local MAX_COUNT = 9007199254740991

-- The count a latch key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_latch_count"

if #KEYS ~= 1 or #ARGV ~= 0 then
  return redis.error_reply('RLK_BADARG expected 1 key and no arguments')
end
local count, err = load_latch_count(KEYS[1])
if err then return err end
return count or 0
