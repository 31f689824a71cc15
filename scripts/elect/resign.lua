-- name: elect/resign
-- version: 3
-- summary: The leader steps down: lock deleted, waiters woken, the record keeps the term, change published.
-- redisson: none
-- time: none
-- KEYS[1]: lock - the lock hash `name`; field <owner> -> 1 while owner leads
-- KEYS[2]: lock_channel - the lock's unlock channel redisson_lock__channel:{name}; candidates waiting listen there
-- KEYS[3]: state - hash {name}:elect with fields value, term, holder, secret
-- KEYS[4]: channel - the election's channel rlk_elect__channel:{name}
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[2]: lease_ms - lease in milliseconds (the release contract's; checked, not used), integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub)
-- ARGV[4]: secret - the leader's incarnation, as its campaign stored it (elect/campaign ARGV[5]), 1..64 bytes
-- return nil: owner does not lead with that secret (no lock, or the record names another holder or secret); no change
-- return 1: resigned: lock deleted, 0 on lock_channel, value, holder, secret dropped, "resigned <term>" on channel
-- error RLK_BADARG: not exactly 4 keys and 4 arguments, secret not 1..64 bytes
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- error RLK_WRONGTYPE: the lock or state key is not a hash
-- end

--- @include "lib/is_lease"

--- @include "lib/publish_cmd"

if #KEYS ~= 4 or #ARGV ~= 4 then
  return redis.error_reply('RLK_BADARG expected 4 keys and 4 arguments')
end
local lock, lock_channel, state, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, lease_ms, secret = ARGV[1], ARGV[2], ARGV[4]
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #secret < 1 or #secret > 64 then
  return redis.error_reply('RLK_BADARG secret must be 1..64 bytes')
end
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
for _, k in ipairs({ lock, state }) do
  local kind = redis.call('type', k).ok
  if kind ~= 'none' and kind ~= 'hash' then
    return redis.error_reply('RLK_WRONGTYPE key ' .. k .. ' holds a ' .. kind .. ', not a hash')
  end
end
if redis.call('hexists', lock, owner) == 0 then return nil end
-- Only the incarnation that leads: another process that set the same holder id (its own secret)
-- must not end the leadership of the live leader.
if redis.call('hget', state, 'holder') ~= owner or redis.call('hget', state, 'secret') ~= secret then
  return nil
end
redis.call('del', lock)
redis.call(publish, lock_channel, '0')
local term = redis.call('hget', state, 'term') or '0'
redis.call('hdel', state, 'value', 'holder', 'secret')
redis.call(publish, channel, 'resigned ' .. term)
return 1
