-- name: token/extend
-- version: 2
-- summary: Extend a token lock: set its lease to lease_ms only if the key still holds the caller's token.
-- redisson: none
-- time: none
-- KEYS[1]: lock - a string key holding the holder's token
-- ARGV[1]: token - the caller's token, 1..1024 bytes
-- ARGV[2]: lease_ms - new lease in milliseconds, integer 1..1000000000000
-- return 1: the key holds token; its lease is now lease_ms
-- return 0: the key holds another token or does not exist; nothing changed
-- error RLK_BADARG: not exactly 1 key and 2 arguments
-- error RLK_BADTOKEN: token is empty or longer than 1024 bytes
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: the lock key holds a value that is not a string
-- end

--- @include "lib/is_lease"

if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 1 key and 2 arguments')
end
local lock, token, lease_ms = KEYS[1], ARGV[1], ARGV[2]
if #token < 1 or #token > 1024 then
  return redis.error_reply('RLK_BADTOKEN token must be 1..1024 bytes')
end
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
local kind = redis.call('type', lock).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('RLK_WRONGTYPE lock key holds a ' .. kind .. ', not a string')
end

if kind == 'string' and redis.call('get', lock) == token then
  redis.call('pexpire', lock, lease_ms)
  return 1
end
return 0
