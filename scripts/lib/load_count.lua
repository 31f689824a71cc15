-- The count a semaphore key holds (nil when there is no key), or nil and an error reply. One GET
-- (redis.pcall) reads it: a key of another type is refused by that GET's error, and its TYPE is
-- read only then, for the message. The script defines MAX_COUNT (2^53 - 1).
-- luacheck: read globals MAX_COUNT

local function load_count(key)
  local s = redis.pcall('get', key)
  if not s then return nil end
  if type(s) == 'table' then
    return nil, redis.error_reply('RLK_WRONGTYPE semaphore key holds a ' .. redis.call('type', key).ok
      .. ', not a string')
  end
  local n = (s == '0' or (#s <= 17 and s:find('^%-?[1-9][0-9]*$') ~= nil)) and tonumber(s)
  if not n or n < -MAX_COUNT or n > MAX_COUNT then
    return nil, redis.error_reply('RLK_WRONGTYPE semaphore key holds a string that is not an integer count')
  end
  return n
end
