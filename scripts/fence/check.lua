-- name: fence/check
-- version: 1
-- summary: Check a fencing token against the fence's highest and record it, without a data write.
-- redisson: none
-- time: none
-- KEYS[1]: fence - string key holding the highest token accepted, {tag}:fence beside the data; never expires
-- ARGV[1]: token - the fencing token of the caller, decimal integer 1..9007199254740990
-- return integer: accepted (now the fence's highest); the highest token accepted before, 0 when none
-- error RLK_BADARG: a bad token (not 1..9007199254740990), or not exactly 1 key and 1 argument
-- error RLK_FENCED: token is below the fence's highest token; the reply is `RLK_FENCED <highest>`; no change
-- error RLK_WRONGTYPE: the fence key is not a string holding a token
-- end

local MAX_TOKEN = 9007199254740991 -- 2^53 - 1: integers above it are not exact in a Lua number

--- @include "lib/fence_admit"

if #KEYS ~= 1 or #ARGV ~= 1 then
  return redis.error_reply('RLK_BADARG expected 1 key and 1 argument')
end
local fence = KEYS[1]
local token, highest = fence_admit(fence, ARGV[1])
if not token then return highest end
if token > highest then
  redis.call('set', fence, string.format('%.0f', token))
end
return highest
