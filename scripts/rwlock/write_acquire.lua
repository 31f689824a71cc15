-- name: rwlock/write_acquire
-- version: 7
-- summary: Take or re-enter the write lock of a read-write lock, claim it when reserved for this waiter, or queue.
-- redisson: RedissonWriteLock.tryLockInnerAsync (hset mode write + <owner>:write; pttl when held); queue: rlk's
-- time: none
-- KEYS[1]: lock - the lock hash; field mode -> read|write, <owner> -> reads, <owner>:write -> writes
-- KEYS[2]: waiters - list {lock}:rlk_waiters of waiting writers' tickets, first come first
-- KEYS[3]: grant - string {lock}:rlk_next: ticket the free lock is reserved for, PX claim window
-- ARGV[1]: lease_ms - lease in milliseconds, integer 1..1000000000000
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes, not 'mode', not ending in ':write'
-- ARGV[3]: ticket - integer -67108863..67108863: 0 never queue; t > 0 new waiter (tail); -t queued already
-- return nil: acquired (free, reserved for no other ticket; own grant and entry dropped), or re-entered (TTL never cut)
-- return integer: not acquired; ms to wait at most: the lock's PTTL (-1: none); reserved: grant PTTL or -1
-- return -3: not acquired; queued first behind another ticket's reservation: attempt again after its claim window
-- return array: {wait, 1}: not acquired; first in the queue, or reserved or queued again: hear the lock's channel
-- error RLK_BADARG: not exactly 3 keys and 3 arguments, or ticket is not an integer in -67108863..67108863
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty, longer than 1024 bytes, 'mode', or ends in ':write'
-- error RLK_WRONGTYPE: lock key not a read-write lock's (lib/rw_shape when no TTL), waiters no list, grant no string
-- error RLK_UPGRADE: the lock is in read mode and owner holds one of the reads; waiting could never succeed
-- end

-- 'none', 'read' or 'write'; nil and the reason when the key is not a read-write lock.
--- @include "lib/rw_mode"

local lock, waiters, grant = KEYS[1], KEYS[2], KEYS[3]
local lease_ms, owner, ticket = ARGV[1], ARGV[2], ARGV[3]
-- The usual call (a single try or a new waiter, a usual lease, an owner the checks below accept)
-- ends here when the lock is free and unreserved; anything else goes on below with the mode and
-- the grant it read (no command sent twice). Each helper not defined (a closure made on every
-- call) is server time saved (docs/performance.md).
local mode, why, reserved
if #KEYS == 3 and #ARGV == 3 and #owner >= 1 and #owner <= 1024 and owner ~= 'mode'
  and owner:sub(-6) ~= ':write' and (lease_ms == '30000' or #lease_ms < 13 and lease_ms:find('^[1-9]%d*$'))
  and (ticket == '0' or #ticket < 9 and ticket:find('^[1-9]%d*$') and tonumber(ticket) <= 67108863) then
  mode, why = rw_mode(lock)
  if mode == 'none' then
    reserved = redis.pcall('get', grant)
    if reserved == false then
      redis.call('hset', lock, 'mode', 'write', owner .. ':write', '1')
      redis.call('pexpire', lock, lease_ms)
      return nil
    end
  end
end

-- luacheck: push ignore 431 (their parameters are named as the keys and arguments passed)
--- @include "lib/is_lease"

--- @include "lib/is_owner"

--- @include "lib/rw_shape"

-- Keeps a waiter that did not take the lock in the queue of tickets, or puts it there.
--- @include "lib/join_queue"
-- luacheck: pop

if #KEYS ~= 3 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 3 arguments')
end
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if not is_owner(owner) then
  return redis.error_reply("RLK_BADOWNER owner must be 1..1024 bytes, not 'mode', not ending in ':write'")
end
local t = 0
if ticket ~= '0' then
  t = tonumber(ticket)
  if not t or t % 1 ~= 0 or t < -67108863 or t > 67108863 or tostring(t) ~= ticket then
    return redis.error_reply('RLK_BADARG ticket must be an integer in -67108863..67108863')
  end
end
if not mode and not why then
  mode, why = rw_mode(lock)
end
if not mode then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

local writer = owner .. ':write'
local me = tostring(t < 0 and -t or t)
local wait
if mode == 'none' then
  -- Free: taken unless reserved for another ticket (a writer granted it by a release).
  if reserved == nil then
    reserved = redis.pcall('get', grant)
  end
  if type(reserved) == 'table' then
    return redis.error_reply('RLK_WRONGTYPE grant key holds a ' .. redis.call('type', grant).ok
      .. ', not a string')
  end
  if not reserved or reserved == me then
    if reserved then
      redis.call('del', grant)
    elseif t < 0 then
      local gone = redis.pcall('lrem', waiters, 0, me)
      if type(gone) == 'table' then
        return redis.error_reply('RLK_WRONGTYPE waiters key holds a ' .. redis.call('type', waiters).ok
          .. ', not a list')
      end
    end
    redis.call('hset', lock, 'mode', 'write', writer, '1')
    redis.call('pexpire', lock, lease_ms)
    return nil
  end
  -- Reserved for another ticket: a single try waits out the claim window; a waiter is woken by
  -- the grant that names it (no bound of its own).
  wait = t == 0 and redis.call('pttl', grant) or -1
else
  if mode == 'write' and redis.call('hexists', lock, writer) == 1 then
    -- A re-entry never shortens the hold (GT; a hold without a TTL keeps none).
    redis.call('hincrby', lock, writer, 1)
    redis.call('pexpire', lock, lease_ms, 'gt')
    return nil
  end
  if mode == 'read' and redis.call('hexists', lock, owner) == 1 then
    return redis.error_reply('RLK_UPGRADE owner holds a read of this lock; release its reads before writing')
  end
  wait = redis.call('pttl', lock)
  -- Not the caller's and no TTL (a live lock always has one): a key rlk does not own?
  if wait == -1 then
    local found = rw_shape(lock)
    if found then
      return redis.error_reply('RLK_WRONGTYPE lock key holds ' .. found)
    end
  end
end
-- Not acquired: a waiter stays in (or joins) the queue. The first in the queue is told so: a
-- release that grants nobody (a Redisson holder's) frees the lock for it, and only the lock's
-- channel carries that (docs/runtime.md).
local first, bad = join_queue(waiters, grant, t, me, reserved)
if bad then
  return bad
end
if first and mode == 'none' then
  -- First in the queue behind another ticket's reservation: nothing tells it when the grantee
  -- claims or dies, so it attempts again once the claim window is over.
  return -3
end
if first then
  return {wait, 1}
end
return wait
