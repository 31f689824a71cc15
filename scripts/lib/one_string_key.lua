-- The prelude of the scripts on one string key and no arguments (latch/ttl, latch/clear_expire,
-- semaphore/ttl, semaphore/clear_expire, psemaphore/ttl): checks there is exactly 1 key and no
-- argument (RLK_BADARG) and that the key holds a string or nothing (RLK_WRONGTYPE, naming it
-- what). Returns the key, or nil and the error reply.

--- @include "lib/wrong_type"

local function one_string_key(what)
  if #KEYS ~= 1 or #ARGV ~= 0 then
    return nil, redis.error_reply('RLK_BADARG expected 1 key and no arguments')
  end
  local key = KEYS[1]
  local why = wrong_type(key, 'string', what)
  if why then
    return nil, redis.error_reply('RLK_WRONGTYPE ' .. why)
  end
  return key
end
