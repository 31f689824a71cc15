-- name: psemaphore/set_permits
-- version: 4
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

-- The checks, the reclaim of expired permits, the new count and a rise's grant and message.
--- @include "lib/psem_resize"

-- The size less the permits still held.
local function sized(_, expired, permits, timeouts)
  return tonumber(permits) - (redis.call('zcard', timeouts) - expired)
end

return psem_resize(is_count, 'permits must be an integer in 0..1000000000000', sized,
  'setting permits', false)
