-- name: elect/renew
-- version: 1
-- summary: Reset the leader's lease, only for the term it was elected in: the last term issued must be that term.
-- redisson: none
-- time: none
-- KEYS[1]: lock - the lock hash `name` (the fenced lock's layout); field <owner> -> 1 while owner leads
-- KEYS[2]: token - string key redisson_lock_token:{name} holding the last token (term) issued; never expires
-- ARGV[1]: lease_ms - new lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[3]: term - the term the leader's campaign returned, decimal integer 1..9007199254740990
-- return 1: owner holds the lock and term is the last term issued: lease now lease_ms, token key without a TTL
-- return 0: owner does not hold the lock, or a later term was issued (another incarnation of owner leads); no change
-- error RLK_BADARG: not exactly 2 keys and 3 arguments, or term not a decimal integer in 1..9007199254740990
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the lock key is not a hash, or the token key not a string holding an integer below 2^53-1
-- end

-- fenced/renew checks only the holder id. One id may campaign from several processes (a
-- StatefulSet's pod name): a leader paused past its lease must not renew the leadership the
-- same id won again in another process, so the renewal names the term it leads in. A term is
-- the token its campaign minted, and nothing mints another on the name while the leader's lock
-- lives, so the last token is the leader's term for exactly as long as that leadership lasts.

--- @include "lib/is_lease"

local MAX_TOKEN = 9007199254740991 -- 2^53 - 1: integers above it are not exact in a Lua number

-- The last token a token key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_token"

if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 3 arguments')
end
local lock, token_key, lease_ms, owner, term = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if #term > 16 or not term:find('^[1-9][0-9]*$') or tonumber(term) > MAX_TOKEN - 1 then
  return redis.error_reply('RLK_BADARG term must be an integer in 1..9007199254740990')
end
local kind = redis.call('type', lock).ok
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('RLK_WRONGTYPE lock key holds a ' .. kind .. ', not a hash')
end
local last, err = load_token(token_key)
if err then return err end

if kind == 'none' or redis.call('hexists', lock, owner) == 0 or last ~= tonumber(term) then
  return 0
end
redis.call('pexpire', lock, lease_ms)
redis.call('persist', token_key) -- a TTL left by version 1 of the scripts
return 1
