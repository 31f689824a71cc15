-- name: semaphore/try_set_permits_ttl
-- version: 1
-- summary: Initialise a semaphore's permit count with a time to live, only if it has no count yet.
-- redisson: RedissonSemaphore.trySetPermitsAsync(permits, timeToLive) (no key -> set px, publish, 1; else 0)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: channel - wake-up channel redisson_sc:{name}
-- ARGV[1]: permits - the initial count, integer 0..1000000000000
-- ARGV[2]: ttl_ms - the key's time to live in ms, integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 1: the key was missing and now holds permits, expiring in ttl_ms; a count > 0 was published on channel
-- return 0: the semaphore already has a count; nothing changed (its TTL neither)
-- error RLK_BADARG: not exactly 2 keys and 3 arguments, or permits is not an integer in 0..1000000000000
-- error RLK_BADLEASE: ttl_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: the semaphore key holds a value that is not a string
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

--- @include "lib/is_count"

--- @include "lib/is_lease"

--- @include "lib/publish_cmd"

if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 3 arguments')
end
local semaphore, channel, permits, ttl_ms = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
if not is_count(permits) then
  return redis.error_reply('RLK_BADARG permits must be an integer in 0..1000000000000')
end
if not is_lease(ttl_ms) then
  return redis.error_reply('RLK_BADLEASE ttl_ms must be an integer in 1..1000000000000')
end
local kind = redis.call('type', semaphore).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('RLK_WRONGTYPE semaphore key holds a ' .. kind .. ', not a string')
end

if kind ~= 'none' then
  return 0
end
redis.call('set', semaphore, permits, 'PX', ttl_ms)
if permits ~= '0' then
  redis.call(publish, channel, permits)
end
return 1
