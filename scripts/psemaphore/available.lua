-- name: psemaphore/available
-- version: 1
-- summary: Reclaim expired permits, then read how many permits are available (writes only when reclaiming).
-- redisson: RedissonPermitExpirableSemaphore.availablePermitsAsync (reclaim; get)
-- time: server - "now" decides which permits expired; they are returned to the count first
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}
-- return integer: the count after reclaiming (may be negative); 0 when there is no count and nothing expired
-- error RLK_BADARG: not exactly 3 keys and no arguments, or reclaiming would overflow the count
-- error RLK_WRONGTYPE: semaphore key not a string holding an integer in +-(2^53-1), or timeouts key not a zset
-- end

local MAX_COUNT = 9007199254740991

local function int(n)
  return string.format('%.0f', n)
end

-- The count a semaphore key holds (nil when there is no key), or nil and an error reply.
local function load_count(key)
  local kind = redis.call('type', key).ok
  if kind == 'none' then return nil end
  if kind ~= 'string' then
    return nil, redis.error_reply('RLK_WRONGTYPE semaphore key holds a ' .. kind .. ', not a string')
  end
  local s = redis.call('get', key)
  local n = (s == '0' or (#s <= 17 and s:find('^%-?[1-9][0-9]*$') ~= nil)) and tonumber(s)
  if not n or n < -MAX_COUNT or n > MAX_COUNT then
    return nil, redis.error_reply('RLK_WRONGTYPE semaphore key holds a string that is not an integer count')
  end
  return n
end

local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Returns expired permits to the count (the caller has checked the sum stays in range).
local function reclaim(semaphore, timeouts, now, expired)
  if expired > 0 then
    redis.call('zremrangebyscore', timeouts, '-inf', int(now))
    redis.call('incrby', semaphore, expired)
  end
end

if #KEYS ~= 3 or #ARGV ~= 0 then
  return redis.error_reply('RLK_BADARG expected 3 keys and no arguments')
end
local semaphore, timeouts, channel = KEYS[1], KEYS[2], KEYS[3]
local count, err = load_count(semaphore)
if err then return err end
local tkind = redis.call('type', timeouts).ok
if tkind ~= 'none' and tkind ~= 'zset' then
  return redis.error_reply('RLK_WRONGTYPE timeouts key holds a ' .. tkind .. ', not a zset')
end
local now = now_ms()
local before = count or 0
local expired = redis.call('zcount', timeouts, '-inf', int(now))
if before + expired > MAX_COUNT then
  return redis.error_reply('RLK_BADARG reclaiming expired permits would take the count above 9007199254740991')
end

reclaim(semaphore, timeouts, now, expired)
if expired > 0 and before + expired > 0 then
  redis.call('publish', channel, int(before + expired))
end
return before + expired
