-- name: psemaphore/release
-- version: 2
-- summary: Give back permits of a permit-expirable semaphore by id; expired or unknown ids are not counted.
-- redisson: RedissonPermitExpirableSemaphore.tryReleaseAsync(ids) (reclaim; zrem ids; incrby; publish)
-- time: server - "now" decides which permits expired (they are reclaimed first, so they no longer count as held)
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}
-- ARGV[1]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- ARGV[2..n]: ids - permit ids to give back, each 1..1024 bytes
-- return integer: how many of the ids were held and are now released (0 when none: expired, unknown or released)
-- error RLK_BADARG: not exactly 3 keys, no publish or no id, an id empty or longer than 1024 bytes, or overflow
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

if #KEYS ~= 3 or #ARGV < 2 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 2 or more arguments')
end
local semaphore, timeouts, channel = KEYS[1], KEYS[2], KEYS[3]
local publish, bad_publish = publish_cmd(ARGV[1])
if not publish then return bad_publish end
for i = 2, #ARGV do
  if #ARGV[i] < 1 or #ARGV[i] > 1024 then
    return redis.error_reply('RLK_BADARG permit id ' .. (i - 1) .. ' must be 1..1024 bytes')
  end
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
if before + expired + #ARGV - 1 > MAX_COUNT then
  return redis.error_reply('RLK_BADARG releasing would take the count above 9007199254740991')
end

reclaim(semaphore, timeouts, now, expired)
local released = 0
for i = 2, #ARGV do
  released = released + redis.call('zrem', timeouts, ARGV[i])
end
if released > 0 then
  redis.call('incrby', semaphore, released)
end
local available = before + expired + released
if available > before and available > 0 then
  redis.call(publish, channel, int(available))
end
return released
