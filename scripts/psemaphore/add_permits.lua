-- name: psemaphore/add_permits
-- version: 1
-- summary: Add to (or, with a negative delta, take from) a permit-expirable semaphore's count, after reclaiming.
-- redisson: RedissonPermitExpirableSemaphore.addPermitsAsync (set get + delta; publish delta when > 0)
-- time: server - "now" decides which permits expired; they are returned to the count first
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}
-- ARGV[1]: delta - permits to add, integer -1000000000000..1000000000000 (may be negative or 0)
-- return integer: the new count (the key is created when missing, its TTL kept when present)
-- error RLK_BADARG: not exactly 3 keys and 1 argument, delta malformed or out of range, or overflow
-- error RLK_WRONGTYPE: semaphore key not a string holding an integer in +-(2^53-1), or timeouts key not a zset
-- end

local MAX_COUNT = 9007199254740991

local function is_delta(s)
  if s == '0' then return true end
  local digits = s:match('^%-?([1-9][0-9]*)$')
  return digits ~= nil and #digits <= 13 and tonumber(digits) <= 1e12
end

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

if #KEYS ~= 3 or #ARGV ~= 1 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 1 argument')
end
local semaphore, timeouts, channel, delta = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
if not is_delta(delta) then
  return redis.error_reply('RLK_BADARG delta must be an integer in -1000000000000..1000000000000')
end
local count, err = load_count(semaphore)
if err then return err end
local tkind = redis.call('type', timeouts).ok
if tkind ~= 'none' and tkind ~= 'zset' then
  return redis.error_reply('RLK_WRONGTYPE timeouts key holds a ' .. tkind .. ', not a zset')
end
local now = now_ms()
local before = count or 0
local expired = redis.call('zcount', timeouts, '-inf', int(now))
local new = before + expired + tonumber(delta)
if before + expired > MAX_COUNT or math.abs(new) > MAX_COUNT then
  return redis.error_reply('RLK_BADARG adding delta would take the count beyond +-9007199254740991')
end

reclaim(semaphore, timeouts, now, expired)
redis.call('incrby', semaphore, delta)
if new > before and new > 0 then
  redis.call('publish', channel, int(new))
end
return new
