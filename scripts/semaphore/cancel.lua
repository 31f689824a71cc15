-- name: semaphore/cancel
-- version: 3
-- summary: A waiter that gives up leaves the semaphore's queue; its unclaimed reservation passes on.
-- redisson: none (rlk's waiter queue)
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: channel - wake-up channel redisson_sc:{name}; grants go to <channel>:rlk:<ticket/1024>
-- KEYS[3]: waiters - list {name}:rlk_waiters of waiting "<ticket> <permits>", first come first
-- KEYS[4]: grant - string {name}:rlk_next: the "<ticket> <permits>" permits are reserved for, PX claim window
-- ARGV[1]: ticket - the waiter's ticket, integer 33554432..67108863
-- ARGV[2]: permits - the permits it asked for, integer 1..1000000000000
-- ARGV[3]: claim_ms - how long the next waiter granted has to claim, integer 1..1000000000000
-- ARGV[4]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 0: the ticket was neither queued nor reserved; nothing changed
-- return 1: the ticket left the queue (when it was first, the next head is granted or woken)
-- return 2: permits were reserved for the ticket: the reservation passed to the next head it covers
-- error RLK_BADARG: not exactly 4 keys and 4 arguments, or ticket, permits or claim_ms out of range
-- error RLK_WRONGTYPE: the semaphore key not an integer string, the waiters key not a list, the grant not a string
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/is_permits"

--- @include "lib/is_lease"

-- The count a semaphore key holds (nil when there is no key) after checking the waiters and
-- grant keys, or nil and an error reply.
--- @include "lib/sem_check"

--- @include "lib/publish_cmd"

-- Reserves permits for the first waiter avail covers and wakes it alone.
--- @include "lib/sem_grant"

if #KEYS ~= 4 or #ARGV ~= 4 then
  return redis.error_reply('RLK_BADARG expected 4 keys and 4 arguments')
end
local semaphore, channel, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ticket, permits, claim_ms = ARGV[1], ARGV[2], ARGV[3]
local publish, bad_publish = publish_cmd(ARGV[4])
if not publish then return bad_publish end
local t = tonumber(ticket)
if not t or t % 1 ~= 0 or t < 33554432 or t > 67108863 or tostring(t) ~= ticket then
  return redis.error_reply('RLK_BADARG ticket must be an integer in 33554432..67108863')
end
if not is_permits(permits) then
  return redis.error_reply('RLK_BADARG permits must be an integer in 1..1000000000000')
end
if not is_lease(claim_ms) then
  return redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
end
local count, err = sem_check(semaphore, waiters, grant)
if err then return err end

local me = ticket .. ' ' .. permits
local avail = count or 0
local reserved = redis.call('get', grant)
if reserved == me then
  redis.call('del', grant)
  redis.call('lrem', waiters, 0, me)
  sem_grant(waiters, grant, avail, claim_ms, channel, publish)
  return 2
end
local was_first = redis.call('lindex', waiters, 0) == me
local removed = redis.call('lrem', waiters, 0, me)
if removed == 0 then
  return 0
end
if was_first and not reserved then
  -- The head asked for more than there was: the next one may be served now; else it is woken
  -- (the same grant message on its wake channel) to attempt and learn that it is first.
  if not sem_grant(waiters, grant, avail, claim_ms, channel, publish) then
    local nxt = tonumber(string.match(redis.call('lindex', waiters, 0) or '', '^([0-9]+) '))
    if nxt and nxt >= 33554432 and nxt < 67108864 then
      redis.pcall(publish, channel .. ':rlk:' .. string.format('%d', math.floor(nxt / 1024)),
                  string.format('%.0f', nxt * 67108864))
    end
  end
end
return 1
