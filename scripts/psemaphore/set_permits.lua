-- name: psemaphore/set_permits
-- version: 2
-- summary: Set a permit-expirable semaphore's size (count + held) after reclaiming; a rise grants the first waiter.
-- redisson: RedissonPermitExpirableSemaphore.setPermitsAsync(permits) (incrby permits - (count + held)); grant: rlk's
-- time: server - "now" decides which permits expired; they are returned to the count first
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}; grants go to <channel>:rlk:<ticket/1024>
-- KEYS[4]: waiters - list {name}:rlk_waiters of waiting "<ticket> <permits>", first come first
-- KEYS[5]: grant - string {name}:rlk_next: the "<ticket> <permits>" permits are reserved for, PX claim window
-- ARGV[1]: permits - the size to set, integer 0..1000000000000
-- ARGV[2]: claim_ms - how long the first waiter granted has to claim, integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return integer: the new count, permits less the permits held (may be negative); key created when missing, TTL kept
-- error RLK_BADARG: not exactly 5 keys and 3 arguments, permits or claim_ms out of range, or overflow
-- error RLK_WRONGTYPE: semaphore not an integer in +-(2^53-1), timeouts not a zset, waiters, grant not list, string
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

-- Held permits stay held: a size below them leaves a negative count, which their releases bring
-- back up. A rise above the count before the call (reclaimed permits included) grants the queue
-- and publishes the new count, as a release does.
local MAX_COUNT = 9007199254740991

--- @include "lib/is_count"

--- @include "lib/int"

-- The count a semaphore key holds (nil when there is no key) after checking the timeouts,
-- waiters and grant keys, or nil and an error reply.
--- @include "lib/psem_check"

--- @include "lib/now_ms"

-- Returns expired permits to the count (the caller has checked the sum stays in range).
--- @include "lib/reclaim"

--- @include "lib/publish_cmd"

--- @include "lib/is_lease"

-- A rise grants the first waiter it covers (unless a reservation lives) and publishes the count.
--- @include "lib/psem_rise"

if #KEYS ~= 5 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 5 keys and 3 arguments')
end
local semaphore, timeouts, channel, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local permits, claim_ms = ARGV[1], ARGV[2]
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
if not is_count(permits) then
  return redis.error_reply('RLK_BADARG permits must be an integer in 0..1000000000000')
end
if not is_lease(claim_ms) then
  return redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
end
local count, err = psem_check(semaphore, timeouts, waiters, grant)
if err then return err end
local now = now_ms()
local before = count or 0
local expired = redis.call('zcount', timeouts, '-inf', int(now))
local held = redis.call('zcard', timeouts) - expired
local new = tonumber(permits) - held
if before + expired > MAX_COUNT or math.abs(new) > MAX_COUNT then
  return redis.error_reply('RLK_BADARG setting permits would take the count beyond +-9007199254740991')
end

reclaim(semaphore, timeouts, now, expired)
local delta = new - (before + expired)
if count == nil or delta ~= 0 then
  redis.call('incrby', semaphore, int(delta))
end
psem_rise(new, before, waiters, grant, claim_ms, channel, publish)
return new
