-- name: psemaphore/release
-- version: 8
-- summary: Give back permits by id (expired or unknown ids not counted); reserve them for the first waiter.
-- redisson: RedissonPermitExpirableSemaphore.tryReleaseAsync(ids) (reclaim; zrem ids; incrby; publish); grant: rlk's
-- time: server - "now" decides which permits expired (they are reclaimed first, so they no longer count as held)
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}; grants go to <channel>:rlk:<ticket/1024>
-- KEYS[4]: waiters - list {name}:rlk_waiters of waiting "<ticket> <permits>", first come first
-- KEYS[5]: grant - string {name}:rlk_next: the "<ticket> <permits>" permits are reserved for, PX claim window
-- ARGV[1]: claim_ms - how long the first waiter granted has to claim, integer 1..1000000000000
-- ARGV[2]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- ARGV[3..n]: ids - permit ids to give back, each 1..1024 bytes
-- return integer: how many of the ids were held and are now released (0: expired, unknown or released)
-- error RLK_BADARG: not 5 keys, no claim_ms, publish or id, claim_ms bad, an id empty or over 1024 bytes, overflow
-- error RLK_WRONGTYPE: semaphore not an integer in +-(2^53-1), timeouts no zset, grant no string, waiters no list
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/int"

--- @include "lib/load_count"

local semaphore, timeouts, channel, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local claim_ms = ARGV[1]
-- The usual call, one id given back while no reservation lives, nobody waits and no permit
-- expired, ends here (the general case below does the rest; a release that serves a waiter
-- pays the EXISTS only). A key of another type sends it on to the general case, which refuses
-- it: EXISTS sees any key, the timeouts key is read by redis.pcall, and nothing is written before.
-- Each helper not defined (a closure made on every call) is server time saved.
if #KEYS == 5 and #ARGV == 3 and (ARGV[2] == 'publish' or ARGV[2] == 'spublish')
  and #claim_ms < 13 and claim_ms:find('^[1-9]%d*$') and #ARGV[3] >= 1 and #ARGV[3] <= 1024
  and redis.call('exists', grant, waiters) == 0 then
  local count, err = load_count(semaphore)
  if err then return err end
  local before = count or 0
  if before < MAX_COUNT then
    local clock = redis.call('time')
    local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
    if redis.pcall('zcount', timeouts, '-inf', int(now)) == 0 then
      local released = redis.call('zrem', timeouts, ARGV[3])
      if released > 0 then
        redis.call('incrby', semaphore, released)
        if before + released > 0 then
          redis.call(ARGV[2], channel, int(before + released))
        end
      end
      return released
    end
  end
end

-- luacheck: push ignore 431 (their parameters are named as the keys and arguments passed)
-- The count a semaphore key holds (nil when there is no key) after checking the timeouts key,
-- or nil and an error reply.
--- @include "lib/psem_load"

-- Whether a reservation lives, else the queue's first entry (the grant and queue keys refused
-- when of another type where they are read).
--- @include "lib/sem_peek"

--- @include "lib/now_ms"

-- Returns expired permits to the count (the caller has checked the sum stays in range).
--- @include "lib/reclaim"

--- @include "lib/publish_cmd"

--- @include "lib/is_lease"

-- Reserves permits for the first waiter avail covers and wakes it alone.
--- @include "lib/sem_grant"
-- luacheck: pop

if #KEYS ~= 5 or #ARGV < 3 then
  return redis.error_reply('RLK_BADARG expected 5 keys and 3 or more arguments')
end
local publish, bad_publish = publish_cmd(ARGV[2])
if not publish then return bad_publish end
if not is_lease(claim_ms) then
  return redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
end
for i = 3, #ARGV do
  if #ARGV[i] < 1 or #ARGV[i] > 1024 then
    return redis.error_reply('RLK_BADARG permit id ' .. (i - 2) .. ' must be 1..1024 bytes')
  end
end
local count, err = psem_load(semaphore, timeouts)
if err then return err end
local _, head, bad = sem_peek(waiters, grant)
if bad then return bad end
local now = now_ms()
local before = count or 0
local expired = redis.call('zcount', timeouts, '-inf', int(now))
if before + expired + #ARGV - 2 > MAX_COUNT then
  return redis.error_reply('RLK_BADARG releasing would take the count above 9007199254740991')
end

reclaim(semaphore, timeouts, now, expired)
local released = 0
for i = 3, #ARGV do
  released = released + redis.call('zrem', timeouts, ARGV[i])
end
if released > 0 then
  redis.call('incrby', semaphore, released)
end
local available = before + expired + released
-- One reservation at a time: while one lives, its grantee's claim grants the next (the chain).
if available > 0 and head then
  sem_grant(waiters, grant, available, claim_ms, channel, publish)
end
if available > before and available > 0 then
  redis.call(publish, channel, int(available))
end
return released
