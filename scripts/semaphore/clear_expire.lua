-- name: semaphore/clear_expire
-- version: 2
-- summary: Remove the semaphore key's time to live (it stays until deleted); publishes nothing.
-- redisson: RedissonSemaphore.clearExpireAsync (persist on the key; 1 when it had a TTL)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- return 1: the key had a time to live and now has none
-- return 0: there is no key, or it had no time to live; nothing changed
-- error RLK_BADARG: not exactly 1 key and no arguments
-- error RLK_WRONGTYPE: the semaphore key holds a value that is not a string
-- end

--- @include "lib/one_string_key"

--- @include "lib/persist_keys"

local key, bad = one_string_key('semaphore')
if not key then return bad end
return persist_keys({ key })
