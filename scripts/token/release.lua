-- name: token/release
-- version: 1
-- summary: Release a token lock: delete the key only if it still holds the caller's token.
-- redisson: none
-- time: none
-- KEYS[1]: lock - a string key holding the holder's token
-- ARGV[1]: token - the caller's token, 1..1024 bytes
-- return 1: the key held token and is deleted
-- return 0: the key holds another token or does not exist; nothing changed
-- error RLK_BADARG: not exactly 1 key and 1 argument
-- error RLK_BADTOKEN: token is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the lock key holds a value that is not a string
-- end

if #KEYS ~= 1 or #ARGV ~= 1 then
  return redis.error_reply('RLK_BADARG expected 1 key and 1 argument')
end
local lock, token = KEYS[1], ARGV[1]
if #token < 1 or #token > 1024 then
  return redis.error_reply('RLK_BADTOKEN token must be 1..1024 bytes')
end
local kind = redis.call('type', lock).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('RLK_WRONGTYPE lock key holds a ' .. kind .. ', not a string')
end

if kind == 'string' and redis.call('get', lock) == token then
  redis.call('del', lock)
  return 1
end
return 0
