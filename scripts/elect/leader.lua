-- name: elect/leader
-- version: 1
-- summary: Read the election: the leader's holder, term, value and remaining lease, or no leader and the last term.
-- redisson: none
-- time: none
-- KEYS[1]: lock - the lock hash `name`; field <owner> -> 1 while owner leads
-- KEYS[2]: state - hash {name}:elect with fields value, term, holder
-- return array: {holder, term, value, ttl_ms} of the leader (PTTL; -1: none), or {'', last term, '', -2}: none
-- error RLK_BADARG: not exactly 2 keys and no arguments
-- error RLK_WRONGTYPE: the lock or state key is not a hash
-- end

if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('RLK_BADARG expected 2 keys and no arguments')
end
local lock, state = KEYS[1], KEYS[2]
for _, k in ipairs({ lock, state }) do
  local kind = redis.call('type', k).ok
  if kind ~= 'none' and kind ~= 'hash' then
    return redis.error_reply('RLK_WRONGTYPE key ' .. k .. ' holds a ' .. kind .. ', not a hash')
  end
end
local holder = redis.call('hget', state, 'holder')
local term = tonumber(redis.call('hget', state, 'term') or '0') or 0
if holder and holder ~= '' and redis.call('hexists', lock, holder) == 1 then
  return { holder, term, redis.call('hget', state, 'value') or '', redis.call('pttl', lock) }
end
return { '', term, '', -2 }
