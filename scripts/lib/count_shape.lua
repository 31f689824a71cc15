-- The shape of a count's key (semaphore, permit-expirable semaphore, count-down latch), the one
-- rule every script applies before it writes, expires or persists one (docs/cli.md, "Keys rlk does
-- not own"): a string holding a decimal integer, -(2^53-1)..2^53-1 (0, or an optional '-' and
-- no leading zero), as load_count reads it. Returns nil when the key is missing or holds a count,
-- else the RLK_WRONGTYPE reason naming the key what. A string longer than 17 bytes is not read.

local function count_shape(key, what)
  local kind = redis.call('type', key).ok
  if kind == 'none' then return nil end
  if kind ~= 'string' then return what .. ' key holds a ' .. kind .. ', not a string' end
  local s = redis.call('strlen', key) <= 17 and redis.call('get', key)
  local n = s and (s == '0' or s:find('^%-?[1-9][0-9]*$') ~= nil) and tonumber(s)
  if not n or n < -9007199254740991 or n > 9007199254740991 then
    return what .. ' key holds a string that is not an integer count'
  end
  return nil
end
