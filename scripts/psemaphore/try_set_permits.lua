-- name: psemaphore/try_set_permits
-- version: 4
-- summary: Initialise a permit-expirable semaphore's count, only if it has no count yet (after reclaiming).
-- redisson: RedissonPermitExpirableSemaphore.trySetPermitsAsync (no key -> set, publish, 1; else 0)
-- time: server - "now" decides which permits expired; they are reclaimed first (creating the count if missing)
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}
-- ARGV[1]: permits - the initial count, integer 0..1000000000000
-- ARGV[2]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 1: there was no count (and nothing to reclaim); the key now holds permits; a count > 0 was published
-- return 0: the semaphore already has a count (expired permits, if any, were returned to it); count unchanged
-- error RLK_BADARG: not exactly 3 keys and 2 arguments, permits is not an integer in 0..1000000000000, or overflow
-- error RLK_WRONGTYPE: semaphore key not a string holding an integer in +-(2^53-1), or timeouts key not a zset
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/is_count"

--- @include "lib/int"

-- The count a semaphore key holds (nil when there is no key) after checking the timeouts key,
-- or nil and an error reply.
--- @include "lib/psem_load"

--- @include "lib/now_ms"

-- Returns expired permits to the count (the caller has checked the sum stays in range).
--- @include "lib/reclaim"

--- @include "lib/publish_cmd"

if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 2 arguments')
end
local semaphore, timeouts, channel, permits = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local publish, bad_publish = publish_cmd(ARGV[2])
if not publish then return bad_publish end
if not is_count(permits) then
  return redis.error_reply('RLK_BADARG permits must be an integer in 0..1000000000000')
end
local count, err = psem_load(semaphore, timeouts)
if err then return err end
local now = now_ms()
local before = count or 0
local expired = redis.call('zcount', timeouts, '-inf', int(now))
if before + expired > MAX_COUNT then
  return redis.error_reply('RLK_BADARG reclaiming expired permits would take the count above 9007199254740991')
end

reclaim(semaphore, timeouts, now, expired)
if count == nil and expired == 0 then
  redis.call('set', semaphore, permits)
  if permits ~= '0' then
    redis.call(publish, channel, permits)
  end
  return 1
end
if expired > 0 and before + expired > 0 then
  redis.call(publish, channel, int(before + expired))
end
return 0
