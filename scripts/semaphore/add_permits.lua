-- name: semaphore/add_permits
-- version: 2
-- summary: Add to (or, with a negative delta, take from) a semaphore's count without waiting.
-- redisson: RedissonSemaphore.addPermitsAsync(permits) (set get + delta, publish the new count)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: channel - wake-up channel redisson_sc:{name}
-- ARGV[1]: delta - permits to add, integer -1000000000000..1000000000000 (may be negative or 0)
-- ARGV[2]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return integer: the new count (the key is created when missing, its TTL kept when present)
-- error RLK_BADARG: not exactly 2 keys and 2 arguments, delta malformed or out of range, or overflow
-- error RLK_WRONGTYPE: the semaphore key holds a non-string, or a string that is not an integer in +-(2^53-1)
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/is_delta"

-- The count a semaphore key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_count"

--- @include "lib/publish_cmd"

if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 2 arguments')
end
local semaphore, channel, delta = KEYS[1], KEYS[2], ARGV[1]
local publish, bad_publish = publish_cmd(ARGV[2])
if not publish then return bad_publish end
if not is_delta(delta) then
  return redis.error_reply('RLK_BADARG delta must be an integer in -1000000000000..1000000000000')
end
local count, err = load_count(semaphore)
if err then return err end
local old = count or 0
if math.abs(old + tonumber(delta)) > MAX_COUNT then
  return redis.error_reply('RLK_BADARG adding delta would take the count beyond +-9007199254740991')
end

local new = redis.call('incrby', semaphore, delta)
if new > 0 and new > old then
  redis.call(publish, channel, string.format('%.0f', new))
end
return new
