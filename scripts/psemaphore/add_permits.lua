-- name: psemaphore/add_permits
-- version: 6
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

-- The checks, the reclaim of expired permits, the new count and a rise's grant and message.
--- @include "lib/psem_resize"

local function added(before, expired, delta)
  return before + expired + tonumber(delta)
end

return psem_resize(is_delta, 'delta must be an integer in -1000000000000..1000000000000', added,
  'adding delta', true)
