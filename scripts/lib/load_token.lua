-- Fenced lock: the last token a token key holds (nil when there is no key), or nil and an error reply.
-- The script defines MAX_TOKEN (2^53 - 1).
-- luacheck: read globals MAX_TOKEN

local function load_token(key)
  local kind = redis.call('type', key).ok
  if kind == 'none' then return nil end
  if kind ~= 'string' then
    return nil, redis.error_reply('RLK_WRONGTYPE token key holds a ' .. kind .. ', not a string')
  end
  local s = redis.call('get', key)
  local n = (s == '0' or (#s <= 17 and s:find('^%-?[1-9][0-9]*$') ~= nil)) and tonumber(s)
  if not n or n < -MAX_TOKEN or n >= MAX_TOKEN then
    return nil, redis.error_reply('RLK_WRONGTYPE token key holds a string that is not an integer token')
  end
  return n
end
