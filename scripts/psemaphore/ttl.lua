-- name: psemaphore/ttl
-- version: 2
-- summary: Read how long the permit-expirable semaphore's count key has to live (read-only).
-- redisson: RedissonPermitExpirableSemaphore.remainTimeToLiveAsync (pttl on the key)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- return integer: the remaining time to live in ms; -1: the key has no time to live; -2: there is no key
-- error RLK_BADARG: not exactly 1 key and no arguments
-- error RLK_WRONGTYPE: the semaphore key holds a value that is not a string
-- end

--- @include "lib/one_string_key"

local key, bad = one_string_key('semaphore')
if not key then return bad end
return redis.call('pttl', key)
