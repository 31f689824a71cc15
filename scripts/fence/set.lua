-- name: fence/set
-- version: 1
-- summary: Fenced SET: only with a token not below the fence's highest, which it records.
-- redisson: none
-- time: none
-- KEYS[1]: fence - string key holding the highest token accepted, {tag}:fence beside the data; never expires
-- KEYS[2]: data - the key written, with the same {tag} as the fence key
-- ARGV[1]: token - the fencing token of the writer, decimal integer 1..9007199254740990
-- ARGV[2]: value - the value stored
-- ARGV[3..n]: options - optional; SET's, each at most once: EX s | PX ms (1..1000000000000) | KEEPTTL, NX | XX, GET
-- return status: accepted; the value was stored (OK)
-- return nil: accepted (the token recorded); NX or XX kept the value from being stored, or GET found no old value
-- return string: accepted, with GET: the old value
-- error RLK_BADARG: a bad token or counts, an unknown, repeated or conflicting option, a bad EX/PX, fence = data key
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

if #KEYS ~= 2 or #ARGV < 2 then
  return redis.error_reply('RLK_BADARG expected 2 keys, a token, a value and options')
end
local fence, data = KEYS[1], KEYS[2]
local bad = fence_keys(fence, data)
if bad then return bad end
local opts, seen = {}, {}
local i = 3
while i <= #ARGV do
  local o = ARGV[i]:lower()
  if seen[o] or not (o == 'ex' or o == 'px' or o == 'nx' or o == 'xx' or o == 'keepttl' or o == 'get') then
    return redis.error_reply('RLK_BADARG unknown or repeated SET option ' .. ARGV[i])
  end
  seen[o] = true
  opts[#opts + 1] = o
  if o == 'ex' or o == 'px' then
    local v = ARGV[i + 1]
    if not v or not is_lease(v) then
      return redis.error_reply('RLK_BADARG ' .. o .. ' needs an integer in 1..1000000000000')
    end
    opts[#opts + 1] = v
    i = i + 1
  end
  i = i + 1
end
if (seen.nx and seen.xx) or ((seen.ex and 1 or 0) + (seen.px and 1 or 0) + (seen.keepttl and 1 or 0) > 1) then
  return redis.error_reply('RLK_BADARG conflicting SET options (NX with XX, or two of EX PX KEEPTTL)')
end
local token, highest = fence_admit(fence, ARGV[1])
if not token then return highest end
return fence_done(fence, token, highest, redis.pcall('set', data, ARGV[2], unpack(opts)))
