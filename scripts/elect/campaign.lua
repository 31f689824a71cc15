-- name: elect/campaign
-- version: 4
-- summary: Campaign: take the free election lock, mint a new term, record value, term and holder, publish.
-- redisson: none
-- time: server - a term is at least TIME in us (as fenced/acquire's token): it rises even if the token is lost
-- KEYS[1]: lock - the lock hash `name` (the fenced lock's layout); field <owner> -> 1
-- KEYS[2]: token - string key redisson_lock_token:{name} holding the last token (term) issued; never expires
-- KEYS[3]: state - hash {name}:elect: value, term, holder, secret of the current (or last) leader
-- KEYS[4]: channel - the election's channel rlk_elect__channel:{name}; every change is published there
-- ARGV[1]: lease_ms - lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[3]: value - what the leader proclaims, 0..65536 bytes
-- ARGV[4]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub)
-- ARGV[5]: secret - the candidate's incarnation: random per handle, 1..64 bytes; kept in state, never replied
-- return array: {term}: new: max(last + 1, TIME in us), "elected <term>" published; led by owner with secret: its term
-- return integer: another holder (or owner with another secret) leads; its PTTL in ms (-1: none); nothing changed
-- error RLK_BADARG: not exactly 4 keys and 5 arguments, value longer than 65536 bytes, secret not 1..64 bytes
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- error RLK_WRONGTYPE: lock key not a lock's, state not an election record (lib/*_shape), token not an integer < 2^53-1
-- end

--- @include "lib/is_lease"

--- @include "lib/lock_type"

-- An election record, or nothing: an application's key at {name}:elect is not replaced.
--- @include "lib/elect_shape"

local MAX_TOKEN = 9007199254740991 -- 2^53 - 1: integers above it are not exact in a Lua number

--- @include "lib/int"

-- The last token a token key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_token"

-- Server time in microseconds since the epoch.
--- @include "lib/now_us"

--- @include "lib/publish_cmd"

if #KEYS ~= 4 or #ARGV ~= 5 then
  return redis.error_reply('RLK_BADARG expected 4 keys and 5 arguments')
end
local lock, token_key, state, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local lease_ms, owner, value, secret = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if #value > 65536 then
  return redis.error_reply('RLK_BADARG value must be at most 65536 bytes')
end
if #secret < 1 or #secret > 64 then
  return redis.error_reply('RLK_BADARG secret must be 1..64 bytes')
end
local publish, bad_publish = publish_cmd(ARGV[4])
if not publish then return bad_publish end
local kind, wrong = lock_type(lock, owner)
if not kind then return wrong end
local skind = redis.call('type', state).ok
if skind ~= 'none' and skind ~= 'hash' then
  return redis.error_reply('RLK_WRONGTYPE state key holds a ' .. skind .. ', not a hash')
end
local last, err = load_token(token_key)
if err then return err end

if kind == 'hash' then
  if redis.call('hexists', lock, owner) == 0 then
    return redis.call('pttl', lock)
  end
  local cur_term = redis.call('hget', state, 'term')
  if cur_term and redis.call('hget', state, 'holder') == owner then
    -- The same owner id leads: its term again only for the same incarnation (the secret it
    -- stored); another process with that id waits as any other candidate.
    if redis.call('hget', state, 'secret') ~= secret then
      return redis.call('pttl', lock)
    end
    redis.call('pexpire', lock, lease_ms)
    return { tonumber(cur_term) }
  end
end
-- Free (or held by owner as a plain fenced lock, without an election record): a new term, which
-- replaces the record: only an election record (the TYPE check above is the cheap path's).
local found = elect_shape(state)
if found then
  return redis.error_reply('RLK_WRONGTYPE state key holds ' .. found)
end
local term = math.max((last or 0) + 1, now_us())
local t = int(term)
if kind == 'none' then
  redis.call('hset', lock, owner, 1)
end
redis.call('pexpire', lock, lease_ms)
redis.call('set', token_key, t)
redis.call('del', state)
redis.call('hset', state, 'value', value, 'term', t, 'holder', owner, 'secret', secret)
redis.call(publish, channel, 'elected ' .. t)
return { term }
