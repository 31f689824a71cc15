-- name: fenced/reenter
-- version: 3
-- summary: Acquire as fenced/acquire; a holder re-entering with the last token issued gets it again, none minted.
-- redisson: none
-- time: server - a token it issues is as fenced/acquire's: at least TIME in microseconds
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: token - string key redisson_lock_token:{name} holding the last token issued; never expires
-- ARGV[1]: lease_ms - lease in milliseconds, integer 1..1000000000000; a re-entry never shortens the TTL
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[3]: token - the token of owner's enclosing hold (RLK_FENCE_TOKEN), integer 1..9007199254740990
-- return array: {token}: owner holds it, token is the last issued: it again (count + 1); else a new one as acquire's
-- return integer: not acquired; the holder's remaining time to live in ms (PTTL, -1 if it has none); no token
-- error RLK_BADARG: not exactly 2 keys and 3 arguments, or token not a decimal integer in 1..9007199254740990
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: lock key not a lock's (lib/lock_shape), or token key not a string holding an integer < 2^53-1
-- end

--- @include "lib/is_lease"

local MAX_TOKEN = 9007199254740991 -- 2^53 - 1: integers above it are not exact in a Lua number

--- @include "lib/fenced_take"

if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 3 arguments')
end
local lease_ms, owner, given = ARGV[1], ARGV[2], ARGV[3]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if #given > 16 or not given:find('^[1-9][0-9]*$') or tonumber(given) > MAX_TOKEN - 1 then
  return redis.error_reply('RLK_BADARG token must be an integer in 1..9007199254740990')
end
return fenced_take(KEYS[1], KEYS[2], lease_ms, owner, tonumber(given))
