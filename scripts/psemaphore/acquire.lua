-- name: psemaphore/acquire
-- version: 3
-- summary: Take permits from a permit-expirable semaphore, each stored under a caller-made id until it expires.
-- redisson: RedissonPermitExpirableSemaphore.tryAcquireAsync (reclaim; decrby + zadd ids; else ':' nearest expiry)
-- time: server - "now" (which permits expired) and each new permit's expiry (TIME in ms + lease_ms) come from TIME
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}
-- ARGV[1]: lease_ms - how long each new permit lives, integer 1..1000000000000
-- ARGV[2]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- ARGV[3..n]: ids - one new permit id per permit to take (e.g. 16 random bytes), each 1..1024 bytes, all distinct
-- return array: acquired: the ids in ARGV order, stored with expiry TIME + lease_ms; count decreased by their number
-- return integer: not acquired; ms until the earliest held permit expires (how long to wait at most)
-- return nil: not acquired, and no held permit expires by itself (none held, or only Redisson's lease-less ones)
-- error RLK_BADARG: fewer than 3 arguments, not exactly 3 keys, an id empty, too long or repeated, or held already
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: semaphore key not a string holding an integer in +-(2^53-1), or timeouts key not a zset
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991
local NON_EXPIRABLE = 922337203685477 -- the expiry Redisson gives a permit acquired without a lease

--- @include "lib/is_lease"

--- @include "lib/int"

-- The count a semaphore key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_count"

--- @include "lib/now_ms"

-- Returns expired permits to the count (the caller has checked the sum stays in range).
--- @include "lib/reclaim"

--- @include "lib/publish_cmd"

if #KEYS ~= 3 or #ARGV < 3 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 3 or more arguments')
end
local semaphore, timeouts, channel, lease_ms = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local publish, bad_publish = publish_cmd(ARGV[2])
if not publish then return bad_publish end
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
local ids, seen = {}, {}
for i = 3, #ARGV do
  local id = ARGV[i]
  if #id < 1 or #id > 1024 then
    return redis.error_reply('RLK_BADARG permit id ' .. (i - 2) .. ' must be 1..1024 bytes')
  end
  if seen[id] then
    return redis.error_reply('RLK_BADARG permit id ' .. (i - 2) .. ' repeats permit id ' .. seen[id])
  end
  seen[id] = i - 2
  ids[i - 2] = id
end
local count, err = load_count(semaphore)
if err then return err end
local tkind = redis.call('type', timeouts).ok
if tkind ~= 'none' and tkind ~= 'zset' then
  return redis.error_reply('RLK_WRONGTYPE timeouts key holds a ' .. tkind .. ', not a zset')
end
local now = now_ms()
for i, id in ipairs(ids) do
  local score = redis.call('zscore', timeouts, id)
  if score and tonumber(score) > now then
    return redis.error_reply('RLK_BADARG permit id ' .. i .. ' is held already')
  end
end
local before = count or 0
local expired = redis.call('zcount', timeouts, '-inf', int(now))
if before + expired > MAX_COUNT then
  return redis.error_reply('RLK_BADARG reclaiming expired permits would take the count above 9007199254740991')
end

reclaim(semaphore, timeouts, now, expired)
local available = before + expired
local acquired = available >= #ids
if acquired then
  redis.call('decrby', semaphore, #ids)
  local expiry = int(now + tonumber(lease_ms))
  for _, id in ipairs(ids) do
    redis.call('zadd', timeouts, expiry, id)
  end
  local ttl = redis.call('pttl', semaphore)
  if ttl > 0 then
    redis.call('pexpire', timeouts, ttl)
  end
  available = available - #ids
end
if available > before and available > 0 then
  redis.call(publish, channel, int(available))
end
if acquired then
  return ids
end
local first = redis.call('zrange', timeouts, 0, 0, 'WITHSCORES')
if first[2] ~= nil and tonumber(first[2]) < NON_EXPIRABLE then
  return tonumber(first[2]) - now
end
return nil
