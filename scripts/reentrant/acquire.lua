-- name: reentrant/acquire
-- version: 24
-- summary: Acquire or re-enter a reentrant lock, claim it when reserved for this waiter, or join the queue.
-- redisson: RedissonLock.tryLockInnerAsync (hincrby + pexpire, pttl when held); rlk's: queue, grant, TTL never cut
-- time: none
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: waiters - list {lock}:rlk_waiters of waiting tickets, first come first
-- KEYS[3]: grant - string {lock}:rlk_next: ticket the free lock is reserved for, PX claim window
-- KEYS[4]: delay - optional: string {lock}:rlk_delay: delay_ms, PX lease + delay_ms; held: hash {lock}:rlk_who
-- ARGV[1]: lease_ms - lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[3]: ticket - optional with 3 keys (absent: 0); -67108863..67108863: 0 never queue; t > 0 new waiter; -t queued
-- ARGV[4]: delay_ms - optional (with KEYS[4]): lock-delay ms, integer 1..1000000000000; or held[:<wait>]
-- return nil: acquired (free or reserved for it: own grant, entry dropped), re-entered (-t: leaves queue), held grant
-- return integer: not acquired; ms to wait at most: holder's PTTL (-1: none); reserved: grant's or -1
-- return -3: not acquired; queued first behind another ticket's reservation: attempt again after its claim window
-- return -4: not acquired, not queued: held (KEYS[4] who): -t neither queued nor recorded (its grant lapsed); draw anew
-- return array: not acquired; {wait, 1}: first in the queue: hear the lock's channel; {wait, 1|0, 1}: free, in delay
-- error RLK_BADARG: not 3 keys and 3 arguments (a single try: or 2; else 4 and 4); ticket, delay_ms, wait out of range
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: lock not a lock's (lib/lock_shape), waiters no list, grant no string, delay or who another type
-- end

local nkeys, nargs = #KEYS, #ARGV
local lock, grant, lease_ms, owner, ticket = KEYS[1], KEYS[3], ARGV[1], ARGV[2], ARGV[3] or '0'
-- The usual single try, decided first and alone: ticket 0, no lock-delay, an owner of 1..1024
-- bytes, the usual lease ('30000' by one comparison of interned strings, else under 13 digits by
-- one pattern); the short form (3 keys, 2 arguments) or ticket '0'. Its arguments pass the checks
-- below, skipped: each check and argument fewer saves server time (docs/performance.md).
local usual = nargs == 2 and nkeys == 3 and #owner > 0 and #owner <= 1024
  and (lease_ms == '30000' or #lease_ms < 13 and lease_ms:find('^[1-9]%d*$'))
if not usual then
  if nargs ~= nkeys and (nargs ~= 2 or nkeys ~= 3) or nkeys ~= 3 and nkeys ~= 4 then
    return redis.error_reply('RLK_BADARG expected 3 keys and 3 arguments (a single try: or 2; '
      .. 'lock-delay: 4 and 4)')
  end
  usual = ticket == '0' and (nkeys == 3 or ARGV[4] == 'held') and #owner > 0 and #owner <= 1024
    and (lease_ms == '30000' or #lease_ms < 13 and lease_ms:find('^[1-9]%d*$'))
end
local t, delay, delay_ms, who, is_lease = 0, nil, nil, nil, nil
-- Held grants: the wait's tag, ':<wait>' (held:<wait>) or '' (held), in its record and its grant.
local tag = ''
if not usual then
  delay, delay_ms = KEYS[4], ARGV[4]
  -- Held grants (docs/runtime.md, "Held grants"): ARGV[4] held names KEYS[4] the hash
  -- {lock}:rlk_who where a waiter's ticket records its owner and lease, so that a release can
  -- write the lock in its name; no lock-delay then. held:<wait> names the wait too (the client's
  -- number), which the grant carries: a later wait of the holder id that drew the same ticket does
  -- not take an earlier wait's grant.
  if delay and delay_ms:sub(1, 4) == 'held' then
    tag = delay_ms:sub(5)
    if tag ~= '' and not (#tag <= 21 and tag:find('^:%d+$')) then
      return redis.error_reply('RLK_BADARG held must be held or held:<wait>, wait 1..20 digits')
    end
    who, delay, delay_ms = delay, nil, nil
  end
  -- is_lease decides an unusual lease (13 digits) and the delay, made only when it is needed (a
  -- closure made on every call, even one never called, costs the uncontended acquire).
  if delay or not (#lease_ms < 13 and lease_ms:find('^[1-9]%d*$')) then
    -- luacheck: push ignore 431 (the helpers' names and parameters are the values' own)
    is_lease = (function()
--- @include "lib/is_lease"
      return is_lease
    end)()
    -- luacheck: pop
    if not is_lease(lease_ms) then
      return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
    end
  end
  if #owner < 1 or #owner > 1024 then
    return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
  end
  if ticket ~= '0' then
    t = tonumber(ticket)
    if not t or t % 1 ~= 0 or t < -67108863 or t > 67108863 or tostring(t) ~= ticket then
      return redis.error_reply('RLK_BADARG ticket must be an integer in -67108863..67108863')
    end
  end
  if delay and not is_lease(delay_ms) then
    return redis.error_reply('RLK_BADARG delay_ms must be an integer in 1..1000000000000')
  end
end

-- The uncontended path: neither the lock nor a reservation exists (one call tells both), so the
-- lock is created fresh; no type can be wrong on keys that do not exist. Arguments to redis.call
-- on this path are strings: a Lua number would be formatted on every call.
if (usual or t >= 0 and not delay) and redis.call('exists', lock, grant) == 0 then
  redis.call('hset', lock, owner, '1')
  redis.call('pexpire', lock, lease_ms)
  return nil
end
local waiters = KEYS[2]
if usual and nkeys == 4 then
  who = KEYS[4]  -- held grants (above)
end

-- Lock-delay (KEYS[4], when asked for): every take writes the delay key with PX lease + delay_ms;
-- renewals refresh it, a release deletes it. A lock whose lease ran out leaves it for delay_ms
-- more, and an attempt that finds the lock free but the delay key present is refused with its PTTL.
if t >= 0 and delay and redis.call('exists', lock, grant, delay) == 0 then
  redis.call('hset', lock, owner, '1')
  redis.call('pexpire', lock, lease_ms)
  redis.call('set', delay, delay_ms, 'px', tostring(lease_ms + delay_ms))
  return nil
end

-- The shape checks of the lock and the delay key, defined past the fast paths (which never
-- read them): a closure made on every call costs the uncontended acquire.
-- luacheck: push ignore 431 (delay_shape's parameter is named as the key passed)
--- @include "lib/lock_shape"

--- @include "lib/delay_shape"

--- @include "lib/wrong_type"
-- luacheck: pop

-- Type errors come from the first call that touches a key (no TYPE on the hot path), before the
-- first write; the who hash's too, by a TYPE only where a path writes before it touches who (a
-- waiter's record is written with its ticket by lib/join_queue: joining the queue pays no TYPE).
local function wrongtype(key, what, want)
  return redis.error_reply('RLK_WRONGTYPE ' .. what .. ' key holds a ' .. redis.call('type', key).ok
    .. ', not a ' .. want)
end

local me = tostring(t < 0 and -t or t)
local ttl = redis.call('pttl', lock)
local wait, reserved
-- Lock-delay: the delay key is read (its shape, lib/delay_shape) before it is waited on, written
-- or refreshed: an application's value there is refused, not waited on for ever nor overwritten.
local function delay_left()
  local found, _, left = delay_shape(delay)
  return left, found and redis.error_reply('RLK_WRONGTYPE delay key holds ' .. found)
end
local delayed, bad_delay
if delay and ttl == -2 then
  delayed, bad_delay = delay_left()
  if bad_delay then return bad_delay end
end
local in_delay = delayed ~= nil
if in_delay then
  -- Free, but its last holder lost it delay_ms ago or less: nobody takes it before the delay
  -- key expires (a release or a force unlock deletes it and publishes).
  ttl, wait = delayed, delayed
elseif ttl == -2 then
  reserved = redis.pcall('get', grant)
  if type(reserved) == 'table' then
    return wrongtype(grant, 'grant', 'string')
  end
  if not reserved or reserved == me then
    local why = who and t ~= 0 and wrong_type(who, 'hash', 'who')
    if why then
      return redis.error_reply('RLK_WRONGTYPE ' .. why)
    end
    if reserved then
      redis.call('del', grant)
    elseif t < 0 then
      local gone = redis.pcall('lrem', waiters, 0, me)
      if type(gone) == 'table' then
        return wrongtype(waiters, 'waiters', 'list')
      end
    end
    if who and t ~= 0 then
      redis.call('hdel', who, me)  -- its record leaves with the ticket
    end
    redis.call('hincrby', lock, owner, 1)
    redis.call('pexpire', lock, lease_ms)
    if delay then
      redis.call('set', delay, delay_ms, 'px', tostring(lease_ms + delay_ms))
    end
    return nil
  end
  -- Reserved for another ticket: a single try waits out the claim window; a waiter is woken by
  -- the grant that names it (no bound of its own).
  wait = t == 0 and redis.call('pttl', grant) or -1
else
  local mine = redis.pcall('hexists', lock, owner)
  if type(mine) == 'table' then
    return wrongtype(lock, 'lock', 'hash')
  end
  local mark = mine == 1 and who and t < 0 and redis.pcall('hget', who, 'held')
  if type(mark) == 'table' then
    return wrongtype(who, 'who', 'hash')
  end
  if mark == me .. tag .. ' ' .. owner then
    -- Held grant: a release wrote the lock in this waiter's name and told it so; the waiter asks
    -- again (it did not read the grant): it holds, once. No re-entry, the count stays; the TTL is
    -- raised to lease_ms from now (GT: never cut), as the waiter counts its lease from this call.
    redis.call('hdel', who, 'held')
    redis.call('pexpire', lock, lease_ms, 'gt')
    return nil
  end
  if mine == 1 then
    -- A re-entry never shortens the hold: another process sharing the holder id (a nested rlk
    -- lock, a child handed the id) may count on a longer lease. GT (a TTL-less hold keeps none).
    if delay then
      delayed, bad_delay = delay_left()
      if bad_delay then return bad_delay end
    end
    if t < 0 then
      -- a queued waiter holds now: it leaves the queue (no later grant to an ended wait)
      if type(redis.pcall('lrem', waiters, 0, me)) == 'table' then
        return wrongtype(waiters, 'waiters', 'list')
      end
      if who then
        redis.call('hdel', who, me)
      end
    end
    redis.call('hincrby', lock, owner, 1)
    redis.call('pexpire', lock, lease_ms, 'gt')
    if delay then
      -- The delay key outlives the hold by delay_ms: PX (the hold's TTL now) + delay_ms.
      local px = tostring(math.max(ttl, tonumber(lease_ms)) + delay_ms)
      if delayed then
        redis.call('pexpire', delay, px)
      else
        redis.call('set', delay, delay_ms, 'px', px)
      end
    end
    return nil
  end
  -- Not the caller's and no TTL (a live lock always has one): a key rlk does not own?
  if ttl == -1 then
    local found = lock_shape(lock)
    if found then
      return redis.error_reply('RLK_WRONGTYPE lock key holds ' .. found)
    end
  end
  wait = ttl
end
-- Keeps a waiter that did not take the lock in the queue of tickets, or puts it there (defined
-- here, past the paths that take the lock: a closure made on every call costs the fast path).
-- luacheck: push ignore 431 (its parameters are named as the values passed)
--- @include "lib/join_queue"
-- luacheck: pop

-- Not acquired: a waiter stays in (or joins) the queue; the list lives as long as waiters come.
-- The first in the queue is told so: a release that grants nobody (a Redisson holder's) frees
-- the lock for it, and only the lock's channel carries that (docs/runtime.md). Held grants: the
-- ticket's record (owner, lease, wait) for the release that reaches it, written by join_queue
-- when it queues the ticket, else here; who lives as long as waiters come, as the list does.
local rec = who and t ~= 0 and lease_ms .. tag .. ' ' .. owner or nil
local first, bad, recorded = join_queue(waiters, grant, t, me, reserved, who, rec)
if bad then
  return bad == 'who' and wrongtype(who, 'who', 'hash') or bad
end
if rec then
  if not recorded and type(redis.pcall('hset', who, me, rec)) == 'table' then
    return wrongtype(who, 'who', 'hash')
  end
  redis.call('pexpire', who, 60000)
end
if first and ttl == -2 then
  -- First in the queue behind another ticket's reservation: nothing tells it when the grantee
  -- claims or dies, so it attempts again once the claim window is over.
  return -3
end
if in_delay then
  -- Told apart from a held lock, so that the client counts refusals by the delay.
  return {wait, first and 1 or 0, 1}
end
if first then
  return {wait, 1}
end
return wait
