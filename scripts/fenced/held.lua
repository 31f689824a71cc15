-- name: fenced/held
-- version: 1
-- summary: Owner's count of a fenced lock, the last token and the PTTL in one read (a lost acquire's read-back).
-- redisson: none
-- time: none
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: token - string key redisson_lock_token:{name} holding the last token issued
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- return array: {count, token, pttl_ms}: count > 0 owner holds it, its token, PTTL (-1: none); else {0, 0, -2}
-- error RLK_BADARG: not exactly 2 keys and 1 argument
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the lock key is not a hash, or the token key not a string holding an integer below 2^53-1
-- end

local MAX_TOKEN = 9007199254740991 -- 2^53 - 1: integers above it are not exact in a Lua number

-- The last token a token key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_token"

if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 1 argument')
end
local lock, token_key, owner = KEYS[1], KEYS[2], ARGV[1]
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
local kind = redis.call('type', lock).ok
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('RLK_WRONGTYPE lock key holds a ' .. kind .. ', not a hash')
end
local last, err = load_token(token_key)
if err then return err end

-- The count, the token and the PTTL in one read: nothing can take the lock between them.
local count = kind == 'hash' and tonumber(redis.call('hget', lock, owner) or '0') or 0
if not count or count <= 0 then
  return { 0, 0, -2 }
end
return { count, last or 0, redis.call('pttl', lock) }
