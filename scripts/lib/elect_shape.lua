-- The shape of an election's record {name}:elect (the rule of "Keys rlk does not own",
-- docs/cli.md): a hash whose field term holds the last term (a decimal integer, 1..16 digits) and
-- whose other fields are only value, holder and secret (elect/campaign writes the four, elect/
-- resign keeps the term alone, elect/proclaim rewrites value). Read before a script replaces it.
-- elect_shape(state) returns nil for a record or no key, else 'a <what>' for
-- 'RLK_WRONGTYPE state key holds ...'. Reads TYPE, and HGET, HEXISTS and HLEN of a hash:
-- commands the ACL recipe of docs/acl.md already grants (no HMGET).

local function elect_shape(state)
  local kind = redis.call('type', state).ok
  if kind == 'none' then return nil end
  if kind ~= 'hash' then return 'a ' .. kind .. ', not a hash' end
  local term = redis.call('hget', state, 'term')
  if not term or #term > 16 or not term:find('^[1-9][0-9]*$') then
    return 'a hash without an integer term (not an election record)'
  end
  local n = 1
  for _, field in ipairs({ 'value', 'holder', 'secret' }) do
    n = n + redis.call('hexists', state, field)
  end
  if redis.call('hlen', state) ~= n then
    return 'a hash with fields other than term, value, holder, secret (not an election record)'
  end
  return nil
end
