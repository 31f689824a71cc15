-- name: token/acquire
-- version: 2
-- summary: Acquire a token lock (SET NX PX): the key redis-py Lock and node redlock use; not reentrant.
-- redisson: none
-- time: none
-- KEYS[1]: lock - a string key holding the holder's token
-- ARGV[1]: token - the would-be holder's unique token, 1..1024 bytes
-- ARGV[2]: lease_ms - lease in milliseconds, integer 1..1000000000000
-- return nil: acquired: the key now holds token with a lease of lease_ms
-- return integer: not acquired (also when token already holds it); the holder's PTTL in ms, -1 if it has none
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

if kind == 'none' then
  redis.call('set', lock, token, 'NX', 'PX', lease_ms)
  return nil
end
return redis.call('pttl', lock)
