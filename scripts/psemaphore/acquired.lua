-- name: psemaphore/acquired
-- version: 1
-- summary: Reclaim expired permits, then count the permits held (writes only when reclaiming).
-- redisson: RedissonPermitExpirableSemaphore.acquiredPermitsAsync (reclaim; zcount timeouts)
-- time: server - "now" decides which permits expired; they are returned to the count first
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}
-- ARGV[1]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return integer: the permits held (unexpired entries of timeouts); 0 when none
-- error RLK_BADARG: not exactly 3 keys and 1 argument, or reclaiming would overflow the count
-- error RLK_WRONGTYPE: semaphore key not a string holding an integer in +-(2^53-1), or timeouts key not a zset
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/int"

-- The count a semaphore key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_count"

--- @include "lib/now_ms"

-- Returns expired permits to the count (the caller has checked the sum stays in range).
--- @include "lib/reclaim"

--- @include "lib/publish_cmd"

if #KEYS ~= 3 or #ARGV ~= 1 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 1 argument')
end
local semaphore, timeouts, channel = KEYS[1], KEYS[2], KEYS[3]
local publish, bad_publish = publish_cmd(ARGV[1])
if not publish then return bad_publish end
local count, err = load_count(semaphore)
if err then return err end
local tkind = redis.call('type', timeouts).ok
if tkind ~= 'none' and tkind ~= 'zset' then
  return redis.error_reply('RLK_WRONGTYPE timeouts key holds a ' .. tkind .. ', not a zset')
end
local now = now_ms()
local before = count or 0
local expired = redis.call('zcount', timeouts, '-inf', int(now))
if before + expired > MAX_COUNT then
  return redis.error_reply('RLK_BADARG reclaiming expired permits would take the count above 9007199254740991')
end

reclaim(semaphore, timeouts, now, expired)
if expired > 0 and before + expired > 0 then
  redis.call(publish, channel, int(before + expired))
end
return redis.call('zcard', timeouts)
