-- name: rwlock/cancel
-- version: 1
-- summary: A waiting writer that gives up leaves the read-write lock's queue; its unclaimed grant passes on.
-- redisson: none (rlk's waiter queue)
-- time: none
-- KEYS[1]: lock - the lock hash; field mode -> read|write, <owner> -> reads, <owner>:write -> writes
-- KEYS[2]: channel - read-write lock channel redisson_rwlock:{lock}
-- KEYS[3]: waiters - list {lock}:rlk_waiters of waiting writers' tickets, first come first
-- KEYS[4]: grant - string {lock}:rlk_next: the ticket the free lock is reserved for, with a PX claim window
-- ARGV[1]: ticket - the waiter's ticket, integer 1..67108863
-- ARGV[2]: claim_ms - how long the next waiting writer has to claim the lock, integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 0: the ticket was neither queued nor reserved; nothing changed
-- return 1: the ticket left the queue (it was first and the lock is held: the new first is woken)
-- return 2: the lock was reserved for the ticket: passed to the next writer (grant, then 0), or free for all (1)
-- error RLK_BADARG: not exactly 4 keys and 3 arguments, or ticket or claim_ms out of range
-- error RLK_WRONGTYPE: the lock key is not a read-write lock, the waiters key not a list or the grant key not a string
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

--- @include "lib/is_lease"

-- 'none', 'read' or 'write'; nil and the reason when the key is not a read-write lock.
--- @include "lib/rw_mode"

-- Reserves the freed lock for the first waiter whose client still listens, and wakes it alone.
--- @include "lib/hand_over"

--- @include "lib/wrong_type"

--- @include "lib/publish_cmd"

if #KEYS ~= 4 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 4 keys and 3 arguments')
end
local lock, channel, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
local ticket, claim_ms = ARGV[1], ARGV[2]
local t = tonumber(ticket)
if not t or t % 1 ~= 0 or t < 1 or t > 67108863 or tostring(t) ~= ticket then
  return redis.error_reply('RLK_BADARG ticket must be an integer in 1..67108863')
end
if not is_lease(claim_ms) then
  return redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
end
local mode, why = rw_mode(lock)
why = why or wrong_type(waiters, 'list', 'waiters') or wrong_type(grant, 'string', 'grant')
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

local was_first = redis.call('lindex', waiters, 0) == ticket
local removed = redis.call('lrem', waiters, 0, ticket)
if redis.call('get', grant) ~= ticket then
  if was_first and mode ~= 'none' then
    -- The first waiter listens on the lock's channel for a release that grants nobody (a Redisson
    -- holder's); the waiter now first does not yet: its wake-up makes it attempt and learn it.
    local nxt = tonumber(redis.call('lindex', waiters, 0))
    if nxt and nxt >= 33554432 then    -- a waiter on its wake channel (lib/hand_over)
      redis.call(publish, channel .. ':rlk:' .. string.format('%d', math.floor(nxt / 1024)),
                 string.format('%.0f', nxt * 67108864))
    end
  end
  return removed > 0 and 1 or 0
end
redis.call('del', grant)
if mode ~= 'none' then
  return 2     -- taken meanwhile (a client that ignores reservations): the next release hands over
end
if hand_over(redis.call('lpop', waiters), waiters, grant, claim_ms, channel, publish) then
  redis.call(publish, channel, '0')
else
  redis.call(publish, channel, '1')    -- free for every waiter: readers enter together
end
return 2
