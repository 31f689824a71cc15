-- name: psemaphore/lease_time
-- version: 3
-- summary: Reclaim expired permits, then read how long a held permit's lease has left (writes only when reclaiming).
-- redisson: RedissonPermitExpirableSemaphore.getLeaseTimeAsync(permitId) (reclaim; zscore: -1 no lease, ms left; 0)
-- time: server - "now" decides which permits expired (reclaimed first) and what is left of the lease
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}
-- ARGV[1]: id - the permit id, 1..1024 bytes
-- ARGV[2]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return integer: the permit is held; ms until its lease runs out (at least 1), or -1: no lease (a Redisson permit)
-- return 0: the permit expired (and was reclaimed), was released or never existed
-- error RLK_BADARG: not exactly 3 keys and 2 arguments, an id empty or longer than 1024 bytes, or overflow
-- error RLK_WRONGTYPE: semaphore key not a string holding an integer in +-(2^53-1), or timeouts key not a zset
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991
local NON_EXPIRABLE = 922337203685477 -- the expiry Redisson gives a permit acquired without a lease

--- @include "lib/publish_cmd"

-- Reclaims expired permits (publishing the count they raise), or returns nil and an error reply.
--- @include "lib/psem_reclaim"

if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 2 arguments')
end
local semaphore, timeouts, channel, id = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local publish, bad_publish = publish_cmd(ARGV[2])
if not publish then return bad_publish end
if #id < 1 or #id > 1024 then
  return redis.error_reply('RLK_BADARG permit id must be 1..1024 bytes')
end
local now, bad = psem_reclaim(semaphore, timeouts, channel, publish)
if not now then return bad end
local score = redis.call('zscore', timeouts, id)
if not score then
  return 0
end
local expiry = tonumber(score)
if expiry >= NON_EXPIRABLE then
  return -1
end
return expiry - now
