-- name: fence/del
-- version: 1
-- summary: Fenced DEL of a key: only with a token not below the fence's highest, which it records.
-- redisson: none
-- time: none
-- KEYS[1]: fence - string key holding the highest token accepted, {tag}:fence beside the data; never expires
-- KEYS[2]: data - the key written, with the same {tag} as the fence key
-- ARGV[1]: token - the fencing token of the writer, decimal integer 1..9007199254740990
-- return integer: accepted; the number of keys deleted (0: the data key did not exist)
-- error RLK_BADARG: a bad token (not 1..9007199254740990), not 2 keys and 1 argument, fence key = data key
-- error RLK_CROSSSLOT: the fence key and the data key do not carry the same non-empty {hash tag}
-- error RLK_FENCED: token is below the fence's highest token; the reply is `RLK_FENCED <highest>`; no change
-- error RLK_WRONGTYPE: the fence key is not a string holding a token, or the data key's type is refused
-- error RLK_CMDERR: the data command failed otherwise (its error text follows); no change, no token recorded
-- end

local MAX_TOKEN = 9007199254740991 -- 2^53 - 1: integers above it are not exact in a Lua number

--- @include "lib/fence_keys"

--- @include "lib/fence_admit"

--- @include "lib/fence_done"

if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 1 argument')
end
local fence, data = KEYS[1], KEYS[2]
local bad = fence_keys(fence, data)
if bad then return bad end

local token, highest = fence_admit(fence, ARGV[1])
if not token then return highest end
return fence_done(fence, token, highest, redis.pcall('del', data))
