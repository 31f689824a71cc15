-- name: semaphore/acquire
-- version: 5
-- summary: Take permits when enough are not reserved for another waiter, claim a reservation, or join the queue.
-- redisson: RedissonSemaphore.tryAcquireAsync(permits) (get >= permits -> decrby); queue and grant: rlk's
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: channel - wake-up channel redisson_sc:{name}; grants go to <channel>:rlk:<ticket/1024>
-- KEYS[3]: waiters - list {name}:rlk_waiters of waiting "<ticket> <permits>", first come first
-- KEYS[4]: grant - string {name}:rlk_next: the "<ticket> <permits>" permits are reserved for, PX claim window
-- ARGV[1]: permits - permits to take, integer 1..1000000000000
-- ARGV[2]: ticket - 0 never queue; t in 33554432..67108863 new waiter (tail); -t queued already
-- ARGV[3]: claim_ms - how long the next waiter granted (a chain) has to claim, integer 1..1000000000000
-- ARGV[4]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return nil: acquired: the count is now count - permits (own reservation and queue entry dropped)
-- return integer: not acquired; -1, or for a single try behind a reservation its PTTL
-- return -3: not acquired; queued first behind another ticket's reservation: attempt again after its claim window
-- return array: {-1, 1}: not acquired; first in the queue, or queued again: hear the semaphore's channel
-- error RLK_BADARG: not exactly 4 keys and 4 arguments, permits, ticket or claim_ms out of range
-- error RLK_WRONGTYPE: semaphore key not an integer string, grant not a string, waiters not a list (when read)
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

-- The count a semaphore key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_count"

local semaphore, channel, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local permits, claim_ms = ARGV[1], ARGV[3]
-- The usual single try, decided first and alone: ticket 0, 4 keys and 4 arguments, permits and
-- claim_ms of under 13 digits, publish or spublish (the checks below pass them and are skipped).
-- When no reservation lives and nobody waits that the permits left over could serve, it ends
-- here: each check not made and each helper not defined (a closure made on every call) is server
-- time saved on every call (docs/performance.md).
local usual = #KEYS == 4 and #ARGV == 4 and ARGV[2] == '0'
  and (ARGV[4] == 'publish' or ARGV[4] == 'spublish')
  and #permits < 13 and permits:find('^[1-9]%d*$') and #claim_ms < 13 and claim_ms:find('^[1-9]%d*$')
local count, err, read
if usual then
  count, err = load_count(semaphore)
  if err then return err end
  read = redis.pcall('get', grant)
  if read == false then
    local n = tonumber(permits)
    if (count or 0) < n then
      return -1
    end
    -- Permits left over go to the first waiter (below); none waits: they stay in the count.
    if count == n or redis.pcall('lindex', waiters, 0) == false then
      redis.call('decrby', semaphore, permits)
      return nil
    end
  end
end

-- The helpers of the general case, defined past the usual single try (which never calls them).
-- luacheck: push ignore 431 (their parameters are named as the keys and arguments passed)
--- @include "lib/is_permits"

--- @include "lib/sem_wait_args"

--- @include "lib/wrong_type"

--- @include "lib/publish_cmd"

-- Reserves permits for the first waiter avail covers and wakes it alone.
--- @include "lib/sem_grant"

--- @include "lib/sem_claim"

--- @include "lib/sem_queue"
-- luacheck: pop

local publish, t = ARGV[4], 0
if not usual then
  if #KEYS ~= 4 or #ARGV ~= 4 then
    return redis.error_reply('RLK_BADARG expected 4 keys and 4 arguments')
  end
  local bad_publish
  publish, bad_publish = publish_cmd(publish)
  if not publish then return bad_publish end
  if not is_permits(permits) then
    return redis.error_reply('RLK_BADARG permits must be an integer in 1..1000000000000')
  end
  t, err = sem_wait_args(ARGV[2], claim_ms)
  if not t then return err end
  count, err = load_count(semaphore)
  if err then return err end
  read = redis.pcall('get', grant)
end
if type(read) == 'table' then
  return redis.error_reply('RLK_WRONGTYPE ' .. wrong_type(grant, 'string', 'grant'))
end

local n = tonumber(permits)
-- The queue is read or written only by a waiter (t ~= 0), or by a single try that leaves permits
-- over while no reservation lives (the chain): its type is checked then, before any write. The
-- usual single try of a semaphore of one permit never touches it.
if t ~= 0 or not read and (count or 0) > n then
  local why = wrong_type(waiters, 'list', 'waiters')
  if why then
    return redis.error_reply('RLK_WRONGTYPE ' .. why)
  end
end
local me = t ~= 0 and (string.format('%d', t < 0 and -t or t) .. ' ' .. permits) or nil
local held, reserved, lost = sem_claim(grant, read, me)      -- its own reservation: claimed (or lost)
local avail = (count or 0) - held
if avail >= n then
  redis.call('decrby', semaphore, permits)
  if t < 0 and not lost then
    redis.call('lrem', waiters, 0, me)      -- a queued waiter that found permits free
  end
  if not reserved and avail > n then
    sem_grant(waiters, grant, avail - n, claim_ms, channel, publish)    -- the chain
  end
  return nil
end
if t == 0 then
  return reserved and redis.call('pttl', grant) or -1
end
local first = sem_queue(waiters, me, t, lost)
if first and reserved then
  return -3
end
if first then
  return {-1, 1}
end
return -1
