-- name: psemaphore/acquire
-- version: 11
-- summary: Take permits (stored by id until they expire) unless reserved for another waiter, or queue.
-- redisson: RedissonPermitExpirableSemaphore.tryAcquireAsync (reclaim; decrby + zadd ids); queue, grant: rlk's
-- time: server - "now" (which permits expired) and each new permit's expiry (TIME in ms + lease_ms) come from TIME
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: timeouts - sorted set {name}:timeout; member permit id -> expiry time in ms since the epoch
-- KEYS[3]: channel - wake-up channel redisson_sc:{name}; grants go to <channel>:rlk:<ticket/1024>
-- KEYS[4]: waiters - list {name}:rlk_waiters of waiting "<ticket> <permits>", first come first
-- KEYS[5]: grant - string {name}:rlk_next: the "<ticket> <permits>" permits are reserved for, PX claim window
-- ARGV[1]: lease_ms - how long each new permit lives, integer 1..1000000000000
-- ARGV[2]: ticket - 0 never queue; t in 33554432..67108863 new waiter (tail); -t queued already
-- ARGV[3]: claim_ms - how long the next waiter granted (a chain) has to claim, 1..1000000000000
-- ARGV[4]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- ARGV[5..n]: ids - one new permit id per permit to take (16 random bytes), each 1..1024 bytes, distinct
-- return array: acquired: the ids (expiry TIME + lease_ms); not acquired, first in the queue: {-1, ms} (below)
-- return integer: not acquired (a single try): ms until the earliest held permit expires or a reservation ends
-- return nil: not acquired; queued behind another waiter (wait for a grant), or a single try, nothing expiring
-- return -3: not acquired; queued first behind another ticket's reservation: attempt again after it
-- error RLK_BADARG: not 5 keys or under 5 arguments, ticket or claim_ms bad, an id empty, long or repeated
-- error RLK_HELD: an id is held already (a permit of it not expired): the caller's own lost acquire ran
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: semaphore not an integer in +-(2^53-1), timeouts no zset, grant no string, waiters no list
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

-- {-1, ms}: the first waiter hears the semaphore's channel too and attempts again within ms (when the
-- earliest held permit expires; -1: none expires by itself). A grant wakes the others.
local MAX_COUNT = 9007199254740991
local NON_EXPIRABLE = 922337203685477 -- the expiry Redisson gives a permit acquired without a lease

--- @include "lib/is_lease"

--- @include "lib/int"

--- @include "lib/load_count"

local semaphore, timeouts, channel, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local lease_ms, claim_ms = ARGV[1], ARGV[3]
-- The usual call, a single try for one permit, ends here when it takes it: no reservation
-- lives, the id is not held, no permit expired, and no permit is left over for a waiter (the
-- general case below does the rest). Its keys are read by redis.pcall: a key of another type
-- sends the call on to the general case, which refuses it. Nothing is written before the
-- permit is taken. Each helper not defined (a closure made on every call) is server time saved.
if #KEYS == 5 and #ARGV == 5 and ARGV[2] == '0' and (ARGV[4] == 'publish' or ARGV[4] == 'spublish')
  and is_lease(lease_ms) and #claim_ms < 13 and claim_ms:find('^[1-9]%d*$') and #ARGV[5] <= 1024
  and #ARGV[5] >= 1 then
  local count, err = load_count(semaphore)
  if err then return err end
  if count and count >= 1 and redis.pcall('get', grant) == false then
    local clock = redis.call('time')
    local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
    -- Nothing expired, so an id there is held: ZADD NX adds nothing then, and the general case
    -- refuses it (RLK_HELD).
    if redis.pcall('zcount', timeouts, '-inf', int(now)) == 0
      and (count == 1 or redis.pcall('lindex', waiters, 0) == false)
      and redis.call('zadd', timeouts, 'NX', int(now + tonumber(lease_ms)), ARGV[5]) == 1 then
      redis.call('decrby', semaphore, 1)
      local ttl = redis.call('pttl', semaphore)
      if ttl > 0 then
        redis.call('pexpire', timeouts, ttl)
      end
      return {ARGV[5]}
    end
  end
end

-- luacheck: push ignore 431 (their parameters are named as the keys and arguments passed)
-- The count a semaphore key holds (nil when there is no key) after checking the timeouts key,
-- or nil and an error reply.
--- @include "lib/psem_load"

--- @include "lib/wrong_type"

--- @include "lib/now_ms"

-- Returns expired permits to the count (the caller has checked the sum stays in range).
--- @include "lib/reclaim"

--- @include "lib/publish_cmd"

--- @include "lib/sem_wait_args"

-- Reserves permits for the first waiter avail covers and wakes it alone.
--- @include "lib/sem_grant"

--- @include "lib/sem_claim"

--- @include "lib/sem_queue"
-- luacheck: pop

if #KEYS ~= 5 or #ARGV < 5 then
  return redis.error_reply('RLK_BADARG expected 5 keys and 5 or more arguments')
end
local publish, bad_publish = publish_cmd(ARGV[4])
if not publish then return bad_publish end
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
local t, bad_wait = sem_wait_args(ARGV[2], claim_ms)
if not t then return bad_wait end
local ids, seen = {}, {}
for i = 5, #ARGV do
  local id = ARGV[i]
  if #id < 1 or #id > 1024 then
    return redis.error_reply('RLK_BADARG permit id ' .. (i - 4) .. ' must be 1..1024 bytes')
  end
  if seen[id] then
    return redis.error_reply('RLK_BADARG permit id ' .. (i - 4) .. ' repeats permit id ' .. seen[id])
  end
  seen[id] = i - 4
  ids[i - 4] = id
end
local count, err = psem_load(semaphore, timeouts)
if err then return err end
local read = redis.pcall('get', grant)
if type(read) == 'table' then
  return redis.error_reply('RLK_WRONGTYPE ' .. wrong_type(grant, 'string', 'grant'))
end
local now = now_ms()
for i, id in ipairs(ids) do
  local score = redis.call('zscore', timeouts, id)
  if score and tonumber(score) > now then
    return redis.error_reply('RLK_HELD permit id ' .. i .. ' is held already')
  end
end
local before = count or 0
local expired = redis.call('zcount', timeouts, '-inf', int(now))
if before + expired > MAX_COUNT then
  return redis.error_reply('RLK_BADARG reclaiming expired permits would take the count above 9007199254740991')
end

local n = #ids
-- The queue is read or written only by a waiter (t ~= 0), or by a single try while no
-- reservation lives that reclaims expired permits or leaves free ones over (they serve the
-- first waiter): its type is checked then, before any write. The usual single try of a semaphore
-- of one permit never touches it.
local available = before + expired
if t ~= 0 or not read and (expired > 0 or available > 0 and available ~= n) then
  local why = wrong_type(waiters, 'list', 'waiters')
  if why then
    return redis.error_reply('RLK_WRONGTYPE ' .. why)
  end
end

reclaim(semaphore, timeouts, now, expired)
local me = t ~= 0 and (string.format('%d', t < 0 and -t or t) .. ' ' .. n) or nil
local held, reserved, lost = sem_claim(grant, read, me)      -- its own reservation: claimed (or lost)
if expired > 0 and not reserved and not lost and redis.call('lindex', waiters, 0) ~= me then
  -- An expiry reclaim serves the queue first: the first waiter the permits cover is granted
  -- before this caller (which is not that waiter) may take what is left.
  local got = sem_grant(waiters, grant, available, claim_ms, channel, publish)
  if got then
    held, reserved = tonumber(string.match(got, ' ([0-9]+)$')), got
  end
end
local avail = available - held
local acquired = avail >= n
if acquired then
  redis.call('decrby', semaphore, n)
  local expiry = int(now + tonumber(lease_ms))
  for _, id in ipairs(ids) do
    redis.call('zadd', timeouts, expiry, id)
  end
  local ttl = redis.call('pttl', semaphore)
  if ttl > 0 then
    redis.call('pexpire', timeouts, ttl)
  end
  if t < 0 and not lost then
    redis.call('lrem', waiters, 0, me)      -- a queued waiter that found permits free
  end
  available, avail = available - n, avail - n
end
-- Free permits no reservation holds (reclaimed, or left over) go to the first waiter they cover:
-- the chain after a claim, or an expiry reclaim.
if not reserved and avail > 0 then
  sem_grant(waiters, grant, avail, claim_ms, channel, publish)
end
if available > before and available > 0 then
  redis.call(publish, channel, int(available))
end
if acquired then
  return ids
end
local bound
local first = redis.call('zrange', timeouts, 0, 0, 'WITHSCORES')
if first[2] ~= nil and tonumber(first[2]) < NON_EXPIRABLE then
  bound = tonumber(first[2]) - now
end
if t == 0 then
  local pttl = reserved and redis.call('pttl', grant) or -1
  if pttl >= 0 and (not bound or pttl < bound) then
    bound = pttl
  end
  return bound
end
if sem_queue(waiters, me, t, lost) then
  return reserved and -3 or {-1, bound or -1}
end
return nil
