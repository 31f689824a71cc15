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
local cur = redis.call('hmget', state, 'holder', 'term', 'value')
local term = tonumber(cur[2] or '0') or 0
if cur[1] and cur[1] ~= '' and redis.call('hexists', lock, cur[1]) == 1 then
  return { cur[1], term, cur[3] or '', redis.call('pttl', lock) }
end
return { '', term, '', -2 }
