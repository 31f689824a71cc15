-- name: psemaphore/update_lease
-- version: 5
-- summary: Set a new lease on a permit that is still held: it now expires lease_ms after the server's TIME.
-- redisson: RedissonPermitExpirableSemaphore.updateLeaseTimeAsync (reclaim; zscore -> zadd, 1; else 0)
-- time: server - "now" decides which permits expired, and the new expiry is TIME in ms + lease_ms
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}
-- ARGV[1]: lease_ms - the permit's new lease, integer 1..1000000000000
-- ARGV[2]: id - the permit id, 1..1024 bytes
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 1: the permit is held; it now expires at TIME + lease_ms
-- return 0: the permit expired (and was reclaimed), was released or never existed; it stays absent
-- error RLK_BADARG: not exactly 3 keys and 3 arguments, an id empty or longer than 1024 bytes, or overflow
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: semaphore key not a string holding an integer in +-(2^53-1), or timeouts key not a zset
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/is_lease"

--- @include "lib/int"

--- @include "lib/publish_cmd"

-- Reclaims expired permits (publishing the count they raise), or returns nil and an error reply.
--- @include "lib/psem_reclaim"

if #KEYS ~= 3 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 3 arguments')
end
local semaphore, timeouts, channel, lease_ms, id = KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2]
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #id < 1 or #id > 1024 then
  return redis.error_reply('RLK_BADARG permit id must be 1..1024 bytes')
end
local now, bad = psem_reclaim(semaphore, timeouts, channel, publish)
if not now then return bad end
if redis.call('zscore', timeouts, id) then
  redis.call('zadd', timeouts, int(now + tonumber(lease_ms)), id)
  return 1
end
return 0
