-- The count a latch key holds (nil when there is no key), or nil and an error reply. The script
-- defines MAX_COUNT (2^53 - 1). Like load_count, with the latch's words in the errors.
-- luacheck: read globals MAX_COUNT

local function load_latch_count(key)
  local kind = redis.call('type', key).ok
  if kind == 'none' then return nil end
  if kind ~= 'string' then
    return nil, redis.error_reply('RLK_WRONGTYPE latch key holds a ' .. kind .. ', not a string')
  end
  local s = redis.call('get', key)
  local n = (s == '0' or (#s <= 17 and s:find('^%-?[1-9][0-9]*$') ~= nil)) and tonumber(s)
  if not n or n < -MAX_COUNT or n > MAX_COUNT then
    return nil, redis.error_reply('RLK_WRONGTYPE latch key holds a string that is not an integer count')
  end
  return n
end
