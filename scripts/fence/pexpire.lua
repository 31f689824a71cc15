-- name: fence/pexpire
-- version: 1
-- summary: Fenced PEXPIRE: only with a token not below the fence's highest, which it records.
-- redisson: none
-- time: none
-- KEYS[1]: fence - string key holding the highest token accepted, {tag}:fence beside the data; never expires
-- KEYS[2]: data - the key written, with the same {tag} as the fence key
-- ARGV[1]: token - the fencing token of the writer, decimal integer 1..9007199254740990
-- ARGV[2]: ttl - time to live in ms, integer 1..1000000000000 (a non-positive TTL would delete: use fence/del)
-- ARGV[3..n]: condition - optional, one of NX XX GT LT (PEXPIRE's)
-- return 1: accepted; the time to live was set
-- return 0: accepted (the token recorded); the key does not exist or the condition was not met
-- error RLK_BADARG: a bad token or counts, ttl not in 1..1000000000000, a condition not NX XX GT LT, fence = data key
-- error RLK_CROSSSLOT: the fence key and the data key do not carry the same non-empty {hash tag}
-- error RLK_FENCED: token is below the fence's highest token; the reply is `RLK_FENCED <highest>`; no change
-- error RLK_WRONGTYPE: the fence key is not a string holding a token, or the data key's type is refused
-- error RLK_CMDERR: the data command failed otherwise (its error text follows); no change, no token recorded
-- end

local MAX_TOKEN = 9007199254740991 -- 2^53 - 1: integers above it are not exact in a Lua number

--- @include "lib/is_lease"

--- @include "lib/fence_keys"

--- @include "lib/fence_admit"

--- @include "lib/fence_done"

if #KEYS ~= 2 or #ARGV < 2 or #ARGV > 3 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 2 or 3 arguments')
end
local fence, data = KEYS[1], KEYS[2]
local bad = fence_keys(fence, data)
if bad then return bad end
local ttl, cond = ARGV[2], ARGV[3]
if not is_lease(ttl) then
  return redis.error_reply('RLK_BADARG ttl must be an integer in 1..1000000000000')
end
if cond then
  cond = cond:lower()
  if cond ~= 'nx' and cond ~= 'xx' and cond ~= 'gt' and cond ~= 'lt' then
    return redis.error_reply('RLK_BADARG the condition must be NX, XX, GT or LT')
  end
end
local token, highest = fence_admit(fence, ARGV[1])
if not token then return highest end
local reply
if cond then reply = redis.pcall('pexpire', data, ttl, cond) else reply = redis.pcall('pexpire', data, ttl) end
return fence_done(fence, token, highest, reply)
