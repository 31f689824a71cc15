-- name: psemaphore/add_permits
-- version: 4
-- summary: Add to (or take from) a permit-expirable semaphore's count after reclaiming; a rise grants the first waiter.
-- redisson: RedissonPermitExpirableSemaphore.addPermitsAsync (set get + delta; publish delta when > 0); grant: rlk's
-- time: server - "now" decides which permits expired; they are returned to the count first
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}; grants go to <channel>:rlk:<ticket/1024>
-- KEYS[4]: waiters - list {name}:rlk_waiters of waiting "<ticket> <permits>", first come first
-- KEYS[5]: grant - string {name}:rlk_next: the "<ticket> <permits>" permits are reserved for, PX claim window
-- ARGV[1]: delta - permits to add, integer -1000000000000..1000000000000 (may be negative or 0)
-- ARGV[2]: claim_ms - how long the first waiter granted has to claim, integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return integer: the new count (key created when missing, TTL kept); a rise above 0 grants and publishes
-- error RLK_BADARG: not exactly 5 keys and 3 arguments, delta or claim_ms malformed or out of range, or overflow
-- error RLK_WRONGTYPE: semaphore not an integer in +-(2^53-1), timeouts not a zset, waiters, grant not list, string
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/is_delta"

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
local delta, claim_ms = ARGV[1], ARGV[2]
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
if not is_delta(delta) then
  return redis.error_reply('RLK_BADARG delta must be an integer in -1000000000000..1000000000000')
end
if not is_lease(claim_ms) then
  return redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
end
local count, err = psem_check(semaphore, timeouts, waiters, grant)
if err then return err end
local now = now_ms()
local before = count or 0
local expired = redis.call('zcount', timeouts, '-inf', int(now))
local new = before + expired + tonumber(delta)
if before + expired > MAX_COUNT or math.abs(new) > MAX_COUNT then
  return redis.error_reply('RLK_BADARG adding delta would take the count beyond +-9007199254740991')
end

reclaim(semaphore, timeouts, now, expired)
redis.call('incrby', semaphore, delta)
psem_rise(new, before, waiters, grant, claim_ms, channel, publish)
return new
