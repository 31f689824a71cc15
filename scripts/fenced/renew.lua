-- name: fenced/renew
-- version: 5
-- summary: Extend the lease of a fenced lock the owner holds (in the hold the token names), never shortening it.
-- redisson: RedissonBaseLock.renewExpirationAsync (hexists -> pexpire, 1; else 0)
-- time: none
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: token - string key redisson_lock_token:{name} holding the last token issued; never expires
-- ARGV[1]: lease_ms - the TTL becomes max(PTTL, lease_ms) (a hold without a TTL keeps none), 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[3]: token - optional: the renewed hold's token, integer 1..9007199254740990; renews only while it is the last
-- return 1: owner holds the lock (in token's hold); its TTL is now at least lease_ms; the token key has no TTL
-- return 0: owner does not hold the lock (or no lock), or token is not the last issued (a newer hold); no change
-- error RLK_BADARG: not exactly 2 keys and 2 arguments (or 3), or token not a decimal integer in 1..9007199254740990
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the lock key is not a hash, or the token key not a string holding an integer below 2^53-1
-- end

-- The holder id alone does not name a hold: one id may hold from several processes (a nested
-- rlk, a child handed the id, an incarnation that restarted). A holder paused past its lease
-- must not renew the hold its id took again elsewhere, so the watchdog names the token of the
-- hold it renews (as elect/renew names the term). Every acquisition of the lock mints a larger
-- token except a re-entry with the enclosing hold's token (fenced/reenter), so the last token
-- is the renewed hold's for exactly as long as no newer acquisition of the name happened.

--- @include "lib/is_lease"

local MAX_TOKEN = 9007199254740991 -- 2^53 - 1: integers above it are not exact in a Lua number

-- The last token a token key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_token"

if #KEYS ~= 2 or (#ARGV ~= 2 and #ARGV ~= 3) then
  return redis.error_reply('RLK_BADARG expected 2 keys and 2 arguments (or 3)')
end
local lock, token_key, lease_ms, owner, given = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if given ~= nil and (#given > 16 or not given:find('^[1-9][0-9]*$') or tonumber(given) > MAX_TOKEN - 1) then
  return redis.error_reply('RLK_BADARG token must be an integer in 1..9007199254740990')
end
local kind = redis.call('type', lock).ok
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('RLK_WRONGTYPE lock key holds a ' .. kind .. ', not a hash')
end
local last, err = load_token(token_key)
if err then return err end

if kind == 'none' or redis.call('hexists', lock, owner) == 0 then
  return 0
end
if given ~= nil and last ~= tonumber(given) then
  return 0
end
-- Never shorter: a hold of the same holder id in another process may have a longer lease.
redis.call('pexpire', lock, lease_ms, 'GT')
if last ~= nil then
  redis.call('persist', token_key) -- a TTL left by version 1 of the scripts
end
return 1
