-- name: elect/proclaim
-- version: 1
-- summary: The leader of a term replaces the value it proclaims, and the change is published.
-- redisson: none
-- time: none
-- KEYS[1]: lock - the lock hash `name`; field <owner> -> 1 while owner leads
-- KEYS[2]: state - hash {name}:elect with fields value, term, holder
-- KEYS[3]: channel - the election's channel rlk_elect__channel:{name}
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[2]: term - the term campaign returned, decimal integer 1..9007199254740990
-- ARGV[3]: value - the new value, 0..65536 bytes
-- ARGV[4]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub)
-- return 1: owner leads in term: value replaced, "proclaimed <term>" published
-- return 0: owner does not hold the lock, or the record names another holder or term; nothing changed
-- error RLK_BADARG: not exactly 3 keys and 4 arguments, a bad term, or value longer than 65536 bytes
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- error RLK_WRONGTYPE: the lock or state key is not a hash
-- end

--- @include "lib/publish_cmd"

if #KEYS ~= 3 or #ARGV ~= 4 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 4 arguments')
end
local lock, state, channel = KEYS[1], KEYS[2], KEYS[3]
local owner, term, value = ARGV[1], ARGV[2], ARGV[3]
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if #term > 16 or not term:find('^[1-9][0-9]*$') or tonumber(term) > 9007199254740990 then
  return redis.error_reply('RLK_BADARG term must be an integer in 1..9007199254740990')
end
if #value > 65536 then
  return redis.error_reply('RLK_BADARG value must be at most 65536 bytes')
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
if redis.call('hget', state, 'holder') ~= owner or redis.call('hget', state, 'term') ~= term then
  return 0
end
redis.call('hset', state, 'value', value)
redis.call(publish, channel, 'proclaimed ' .. term)
return 1
