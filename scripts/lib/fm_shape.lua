-- Faster MultiLock: the shape of a group hash (the rule of "Keys rlk does not own", docs/cli.md),
-- read by acquire of a group without a TTL (a live group has one) and by force_release always,
-- after lib/fm_type found a hash. nil when every field is either a value (no ':') whose holder h
-- has its field '<value>:<h>:expire_time', or a holder's '<value>:<holder>:expire_time' or
-- ':lock_count' holding an integer (Redisson's layout; a lapsed holder's leftovers included); else
-- the RLK_WRONGTYPE reply.

local function fm_shape(group)
  local flat = redis.call('hgetall', group)
  local fields = {}
  for i = 1, #flat, 2 do
    fields[flat[i]] = flat[i + 1]
  end
  for i = 1, #flat, 2 do
    local f, v = flat[i], flat[i + 1]
    local ok
    if not f:find(':', 1, true) then
      ok = fields[f .. ':' .. v .. ':expire_time'] ~= nil
    else
      ok = (f:sub(-12) == ':expire_time' or f:sub(-11) == ':lock_count')
        and #v <= 17 and v:find('^%-?%d+$') ~= nil
    end
    if not ok then
      return redis.error_reply('RLK_WRONGTYPE group key holds a hash that is not a group (field '
        .. (i + 1) / 2 .. ' is neither a value with its holder nor a holder\'s count or time)')
    end
  end
  return nil
end
