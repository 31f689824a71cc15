-- name: reentrant/cancel
-- version: 10
-- summary: A waiter that gives up leaves the reentrant lock's queue; its unclaimed grant passes on.
-- redisson: none (rlk's waiter queue)
-- time: none
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: channel - unlock channel redisson_lock__channel:{name}
-- KEYS[3]: waiters - list {lock}:rlk_waiters of waiting tickets, first come first
-- KEYS[4]: grant - string {lock}:rlk_next: the ticket the free lock is reserved for, with a PX claim window
-- KEYS[5]: who - optional (with ARGV[4] held): hash {lock}:rlk_who, the waiters' records (reentrant/acquire)
-- ARGV[1]: ticket - the waiter's ticket, integer 1..67108863
-- ARGV[2]: claim_ms - how long the next waiter has to claim the lock, integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- ARGV[4]: held - optional (with KEYS[5] and ARGV[5]): held or held:<wait>: the record goes, the wait's grant back
-- ARGV[5]: owner - with held: the waiter's holder id, 1..1024 bytes: only its own held grant is given back
-- return 0: the ticket was neither queued nor reserved; nothing changed
-- return 1: the ticket left the queue (it was first and the lock is held: the new first is woken)
-- return 2: the lock was reserved for the ticket: passed to the next waiter (published as release does)
-- return 3: held: the lock was granted held to the ticket: released as a last exit (handed on as release does)
-- error RLK_BADARG: not 4 keys and 3 arguments (held: 5 and 5), or ticket, claim_ms or held[:<wait>] out of range
-- error RLK_BADOWNER: held: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: the lock key is not a hash, waiters not a list, grant not a string or who not a hash
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

--- @include "lib/is_lease"

-- Reserves the freed lock for the first waiter whose client still listens, and wakes it alone.
--- @include "lib/hand_over"

-- Takes the ticket out of the queue, or passes on the lock reserved for it.
--- @include "lib/leave_queue"

-- Held grants: writes the freed lock in the next waiter's name when it takes them.
--- @include "lib/hand_over_held"

--- @include "lib/wrong_type"

--- @include "lib/publish_cmd"

--- @include "lib/cancel_args"

-- Held grants (docs/runtime.md, "Held grants"): KEYS[5] who, ARGV[4] held or held:<wait> (the
-- wait that gives up, as its acquire named it) and ARGV[5] the waiter's holder id; the rest as
-- without. Its other arguments are checked as lib/cancel_args checks them, in the same order, then
-- the holder id.
local who, publish, bad
local tag = #ARGV == 5 and ARGV[4]:sub(5) or ''
if #KEYS == 5 and #ARGV == 5 then
  if ARGV[4]:sub(1, 4) ~= 'held' or tag ~= '' and not (#tag <= 21 and tag:find('^:%d+$')) then
    return redis.error_reply('RLK_BADARG held must be held or held:<wait>, wait 1..20 digits')
  end
  who = KEYS[5]
  publish, bad = publish_cmd(ARGV[3])
  local t = tonumber(ARGV[1])
  if publish and (not t or t % 1 ~= 0 or t < 1 or t > 67108863 or tostring(t) ~= ARGV[1]) then
    publish, bad = nil, redis.error_reply('RLK_BADARG ticket must be an integer in 1..67108863')
  end
  if publish and not is_lease(ARGV[2]) then
    publish, bad = nil, redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
  end
  if publish and (#ARGV[5] < 1 or #ARGV[5] > 1024) then
    publish, bad = nil, redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
  end
else
  publish, bad = cancel_args()
end
if not publish then
  return bad
end
local lock, channel, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ticket, claim_ms = ARGV[1], ARGV[2]
local why = wrong_type(lock, 'hash', 'lock') or wrong_type(waiters, 'list', 'waiters')
  or wrong_type(grant, 'string', 'grant') or (who and wrong_type(who, 'hash', 'who'))
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

if who then
  -- A held grant of this ticket to this waiter (lib/hand_over_held): it gave up after the release
  -- wrote the lock in its name. It gives the lock back as its last exit would: to the next waiter,
  -- at once. The mark names the owner and the wait too: another waiter that drew the same ticket
  -- (one client's waiters share a wake channel), or an earlier wait of the same holder id whose
  -- give-up arrives late, is not the one granted, and gives nothing away.
  local mark = redis.call('hget', who, 'held')
  local holder = mark == ticket .. tag .. ' ' .. ARGV[5] and ARGV[5]
  local count = holder and redis.call('hget', lock, holder)
  redis.call('hdel', who, ticket)
  if holder then
    redis.call('hdel', who, 'held')
  end
  if count then
    if count ~= '1' then
      -- the holder id is shared and another holder of it entered since: it still holds
      redis.call('hincrby', lock, holder, -1)
      return 3
    end
    redis.call('del', lock)
    local _, held = hand_over_held(redis.call('lpop', waiters), lock, waiters, grant, who, claim_ms,
                                   channel, publish, nil, holder)
    if not held then
      redis.call(publish, channel, '0')
    end
    return 3
  end
end

local left, handed = leave_queue(waiters, grant, ticket, redis.call('exists', lock) == 1,
                                 claim_ms, channel, publish)
if handed ~= nil then
  redis.call(publish, channel, '0')
end
return left
