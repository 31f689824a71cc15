-- name: elect/proclaim
-- version: 2
-- summary: The leader of a term replaces the value it proclaims, and the change is published.
-- redisson: none
-- time: none
-- KEYS[1]: lock - the lock hash `name`; field <owner> -> 1 while owner leads
-- KEYS[2]: state - hash {name}:elect with fields value, term, holder, secret
-- KEYS[3]: channel - the election's channel rlk_elect__channel:{name}
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[2]: term - the term campaign returned, decimal integer 1..9007199254740990
-- ARGV[3]: value - the new value, 0..65536 bytes
-- ARGV[4]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub)
-- ARGV[5]: secret - the leader's incarnation, as its campaign stored it (elect/campaign ARGV[5]), 1..64 bytes
-- return 1: owner leads in term with that secret: value replaced, "proclaimed <term>" published
-- return 0: owner does not hold the lock, or the record names another holder, term or secret; nothing changed
-- error RLK_BADARG: not 3 keys and 5 arguments, a bad term, value longer than 65536 bytes, secret not 1..64 bytes
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- error RLK_WRONGTYPE: the lock or state key is not a hash
-- end

--- @include "lib/publish_cmd"

if #KEYS ~= 3 or #ARGV ~= 5 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 5 arguments')
end
local lock, state, channel = KEYS[1], KEYS[2], KEYS[3]
local owner, term, value, secret = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if #term > 16 or not term:find('^[1-9][0-9]*$') or tonumber(term) > 9007199254740990 then
  return redis.error_reply('RLK_BADARG term must be an integer in 1..9007199254740990')
end
if #value > 65536 then
  return redis.error_reply('RLK_BADARG value must be at most 65536 bytes')
end
if #secret < 1 or #secret > 64 then
  return redis.error_reply('RLK_BADARG secret must be 1..64 bytes')
end
local publish, bad_publish = publish_cmd(ARGV[4])
if not publish then return bad_publish end
for _, k in ipairs({ lock, state }) do
  local kind = redis.call('type', k).ok
  if kind ~= 'none' and kind ~= 'hash' then
    return redis.error_reply('RLK_WRONGTYPE key ' .. k .. ' holds a ' .. kind .. ', not a hash')
  end
end
if redis.call('hexists', lock, owner) == 0 then return 0 end
if redis.call('hget', state, 'holder') ~= owner or redis.call('hget', state, 'term') ~= term
    or redis.call('hget', state, 'secret') ~= secret then
  return 0
end
redis.call('hset', state, 'value', value)
redis.call(publish, channel, 'proclaimed ' .. term)
return 1
