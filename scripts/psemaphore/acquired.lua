-- name: psemaphore/acquired
-- version: 3
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

--- @include "lib/psem_count"

return psem_count(true)
