-- name: latch/ttl
-- version: 2
-- summary: Read how long the latch key has to live (read-only).
-- redisson: none (RCountDownLatch is not RExpirable in Redisson 4.7; rlk's PTTL on the key)
-- time: none
-- KEYS[1]: latch - a string key holding the remaining count; no key means count 0 (open)
-- return integer: the remaining time to live in ms; -1: the key has no time to live; -2: there is no key
-- error RLK_BADARG: not exactly 1 key and no arguments
-- error RLK_WRONGTYPE: the latch key holds a value that is not a string
-- end

--- @include "lib/one_string_key"

local key, bad = one_string_key('latch')
if not key then return bad end
return redis.call('pttl', key)
