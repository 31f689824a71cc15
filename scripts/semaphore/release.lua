-- name: semaphore/release
-- version: 2
-- summary: Give permits back to a semaphore (creating its key if missing) and wake waiters.
-- redisson: RedissonSemaphore.releaseAsync(permits) (incrby, publish the new count)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: channel - wake-up channel redisson_sc:{name}
-- ARGV[1]: permits - permits to give back, integer 1..1000000000000
-- ARGV[2]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return integer: the new count; when it is > 0 it was published on channel
-- error RLK_BADARG: not exactly 2 keys and 2 arguments, permits not an integer in 1..1000000000000, or overflow
-- error RLK_WRONGTYPE: the semaphore key holds a non-string, or a string that is not an integer in +-(2^53-1)
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/is_permits"

-- The count a semaphore key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_count"

--- @include "lib/publish_cmd"

if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 2 arguments')
end
local semaphore, channel, permits = KEYS[1], KEYS[2], ARGV[1]
local publish, bad_publish = publish_cmd(ARGV[2])
if not publish then return bad_publish end
if not is_permits(permits) then
  return redis.error_reply('RLK_BADARG permits must be an integer in 1..1000000000000')
end
local count, err = load_count(semaphore)
if err then return err end
if (count or 0) + tonumber(permits) > MAX_COUNT then
  return redis.error_reply('RLK_BADARG releasing permits would take the count above 9007199254740991')
end

local new = redis.call('incrby', semaphore, permits)
if new > 0 then
  redis.call(publish, channel, string.format('%.0f', new))
end
return new
