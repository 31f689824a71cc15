-- name: latch/clear_expire
-- version: 3
-- summary: Remove the latch key's time to live (it stays until deleted); publishes nothing.
-- redisson: none (RCountDownLatch is not RExpirable in Redisson 4.7; rlk's PERSIST on the key)
-- time: none
-- KEYS[1]: latch - a string key holding the remaining count; no key means count 0 (open)
-- return 1: the key had a time to live and now has none
-- return 0: there is no key, or it had no time to live; nothing changed
-- error RLK_BADARG: not exactly 1 key and no arguments
-- error RLK_WRONGTYPE: the latch key is not a string holding a count (lib/count_shape)
-- end

--- @include "lib/one_string_key"

--- @include "lib/count_shape"

--- @include "lib/persist_keys"

local key, bad = one_string_key('latch')
if not key then return bad end
local why = count_shape(key, 'latch')
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end
return persist_keys({ key })
