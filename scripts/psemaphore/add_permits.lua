-- name: psemaphore/add_permits
-- version: 2
-- summary: Add to (or, with a negative delta, take from) a permit-expirable semaphore's count, after reclaiming.
-- redisson: RedissonPermitExpirableSemaphore.addPermitsAsync (set get + delta; publish delta when > 0)
-- time: server - "now" decides which permits expired; they are returned to the count first
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}
-- ARGV[1]: delta - permits to add, integer -1000000000000..1000000000000 (may be negative or 0)
-- ARGV[2]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return integer: the new count (the key is created when missing, its TTL kept when present)
-- error RLK_BADARG: not exactly 3 keys and 2 arguments, delta malformed or out of range, or overflow
-- error RLK_WRONGTYPE: semaphore key not a string holding an integer in +-(2^53-1), or timeouts key not a zset
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/is_delta"

--- @include "lib/int"

-- The count a semaphore key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_count"

--- @include "lib/now_ms"

-- Returns expired permits to the count (the caller has checked the sum stays in range).
--- @include "lib/reclaim"

--- @include "lib/publish_cmd"

if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 2 arguments')
end
local semaphore, timeouts, channel, delta = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local publish, bad_publish = publish_cmd(ARGV[2])
if not publish then return bad_publish end
if not is_delta(delta) then
  return redis.error_reply('RLK_BADARG delta must be an integer in -1000000000000..1000000000000')
end
local count, err = load_count(semaphore)
if err then return err end
local tkind = redis.call('type', timeouts).ok
if tkind ~= 'none' and tkind ~= 'zset' then
  return redis.error_reply('RLK_WRONGTYPE timeouts key holds a ' .. tkind .. ', not a zset')
end
local now = now_ms()
local before = count or 0
local expired = redis.call('zcount', timeouts, '-inf', int(now))
local new = before + expired + tonumber(delta)
if before + expired > MAX_COUNT or math.abs(new) > MAX_COUNT then
  return redis.error_reply('RLK_BADARG adding delta would take the count beyond +-9007199254740991')
end

reclaim(semaphore, timeouts, now, expired)
redis.call('incrby', semaphore, delta)
if new > before and new > 0 then
  redis.call(publish, channel, int(new))
end
return new
