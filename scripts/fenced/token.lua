-- name: fenced/token
-- version: 1
-- summary: Read the last fencing token issued on a fenced lock's name (read-only).
-- redisson: RedissonFencedLock.getTokenAsync (get)
-- time: none
-- KEYS[1]: token - string key redisson_lock_token:{name} holding the last token issued
-- return integer: the last token issued; 0 when there is no token key (none issued, or it expired)
-- error RLK_BADARG: not exactly 1 key and no arguments
-- error RLK_WRONGTYPE: the token key holds a non-string, or a string that is not an integer below 2^53-1
-- end

local MAX_TOKEN = 9007199254740991 -- 2^53 - 1: integers above it are not exact in a Lua number

if #KEYS ~= 1 or #ARGV ~= 0 then
  return redis.error_reply('RLK_BADARG expected 1 key and no arguments')
end
local token_key = KEYS[1]
local kind = redis.call('type', token_key).ok
if kind == 'none' then
  return 0
end
if kind ~= 'string' then
  return redis.error_reply('RLK_WRONGTYPE token key holds a ' .. kind .. ', not a string')
end
local s = redis.call('get', token_key)
local n = (s == '0' or (#s <= 17 and s:find('^%-?[1-9][0-9]*$') ~= nil)) and tonumber(s)
if not n or n < -MAX_TOKEN or n >= MAX_TOKEN then
  return redis.error_reply('RLK_WRONGTYPE token key holds a string that is not an integer token')
end
return n
