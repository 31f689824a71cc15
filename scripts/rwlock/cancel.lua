-- name: rwlock/cancel
-- version: 2
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

-- Takes the ticket out of the queue, or passes on the lock reserved for it.
--- @include "lib/leave_queue"

--- @include "lib/wrong_type"

--- @include "lib/publish_cmd"

--- @include "lib/cancel_args"

local publish, bad = cancel_args()
if not publish then
  return bad
end
local lock, channel, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ticket, claim_ms = ARGV[1], ARGV[2]
local mode, why = rw_mode(lock)
why = why or wrong_type(waiters, 'list', 'waiters') or wrong_type(grant, 'string', 'grant')
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

local left, handed = leave_queue(waiters, grant, ticket, mode ~= 'none', claim_ms, channel, publish)
if handed ~= nil then
  redis.call(publish, channel, handed and '0' or '1')   -- '1': free for every waiter, readers together
end
return left
