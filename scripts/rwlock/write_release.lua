-- name: rwlock/write_release
-- version: 8
-- summary: Leave the write lock once; on the last exit downgrade to the owner's reads, or delete, grant; publish 1.
-- redisson: RedissonWriteLock.unlockInnerAsync (hincrby -1; pexpire while held; else hdel + mode read or del)
-- time: none
-- KEYS[1]: lock - the lock hash; field mode -> read|write, <owner> -> reads, <owner>:write -> writes
-- KEYS[2]: channel - read-write lock channel redisson_rwlock:{lock}
-- KEYS[3]: prefix - {lock} (lock if it has a '{'); the script derives <prefix>:<owner>:rwlock_timeout:<n>, same slot
-- KEYS[4]: waiters - list {lock}:rlk_waiters of waiting writers' tickets, first come first
-- KEYS[5]: grant - string {lock}:rlk_next: ticket the free lock is reserved for, PX claim window
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes, not 'mode', not ending in ':write'
-- ARGV[2]: lease_ms - lease in milliseconds while the owner still writes (TTL >= lease_ms), integer 1..1000000000000
-- ARGV[3]: claim_ms - how long the first waiting writer has to claim the lock, integer 1..1000000000000
-- ARGV[4]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return nil: owner does not hold the write lock (or there is no lock); nothing changed
-- return 0: still written by owner: write count - 1, hash TTL raised to at least lease_ms (none: kept none)
-- return 1: write released; downgraded to read (owner's live reads, TTL = longest, >= 1 ms) or deleted; 1 published
-- return 2: write released, deleted, reserved for the first writer for claim_ms; head*2^26 on its wake channel, then 1
-- error RLK_BADARG: not 5 keys and 4 arguments, prefix not the lock's timeout-key prefix, or claim_ms not 1..10^12
-- error RLK_BADOWNER: owner is empty, longer than 1024 bytes, 'mode', or ends in ':write'
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: the lock key is not a hash with mode read or write, or the waiters key not a list
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

-- Redisson's prefix of the per-read timeout keys: the hash tag of the lock's slot.
--- @include "lib/timeout_prefix"

local lock, channel, prefix, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, lease_ms, claim_ms = ARGV[1], ARGV[2], ARGV[3]
-- The usual call (arguments the checks below accept, the usual lease and claim window) that ends
-- the caller's only write, holding no read, while nobody waits: the mode, the write count and the
-- reads by HGET, then LPOP, DEL, PUBLISH, and no helper defined (a closure made on every call).
-- Anything else goes on below with what it read (no command sent twice); a key of another type
-- fails the first read (redis.pcall) and is refused there, before any write.
local mode, count, reads, head
if #KEYS == 5 and #ARGV == 4 and (ARGV[4] == 'publish' or ARGV[4] == 'spublish')
  and #owner >= 1 and #owner <= 1024 and owner ~= 'mode' and owner:sub(-6) ~= ':write'
  and (lease_ms == '30000' or #lease_ms < 13 and lease_ms:find('^[1-9]%d*$'))
  and #claim_ms < 13 and claim_ms:find('^[1-9]%d*$') and prefix == timeout_prefix(lock)
  and redis.pcall('hget', lock, 'mode') == 'write' then
  mode = 'write'
  count = redis.call('hget', lock, owner .. ':write')
  if count == '1' then
    reads = redis.call('hget', lock, owner)
    if not reads then
      head = redis.pcall('lpop', waiters)
      if head == false then
        redis.call('del', lock)
        redis.call(ARGV[4], channel, '1')
        return 1
      end
    end
  end
end

-- luacheck: push ignore 431 (their parameters are named as the keys and arguments passed)
--- @include "lib/is_lease"

--- @include "lib/is_owner"

-- 'none', 'read' or 'write'; nil and the reason when the key is not a read-write lock.
--- @include "lib/rw_mode"

--- @include "lib/publish_cmd"

-- Reserves the freed lock for the first waiter whose client still listens, and wakes it alone.
--- @include "lib/hand_over"

-- The longest PTTL among the timeout keys of the owner's counted reads (< 0: none live; 0: a read in
-- its last millisecond, which Redis keeps until its clock passes the expire time). reads: the
-- owner's field when read already (false: none), nil to read it.
local function longest_own_read(lock, prefix, owner, reads)
  local longest = -2
  if reads == nil then
    reads = redis.call('hget', lock, owner)
  end
  local count = tonumber(reads) or 0
  for n = count, 1, -1 do
    longest = math.max(longest, redis.call('pttl', prefix .. ':' .. owner .. ':rwlock_timeout:' .. n))
  end
  return longest
end

-- luacheck: pop

if #KEYS ~= 5 or #ARGV ~= 4 then
  return redis.error_reply('RLK_BADARG expected 5 keys and 4 arguments')
end
local publish, bad_publish = publish_cmd(ARGV[4])
if not publish then return bad_publish end
if prefix ~= timeout_prefix(lock) then
  return redis.error_reply('RLK_BADARG prefix must be ' .. timeout_prefix(lock))
end
if not is_owner(owner) then
  return redis.error_reply("RLK_BADOWNER owner must be 1..1024 bytes, not 'mode', not ending in ':write'")
end
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if not is_lease(claim_ms) then
  return redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
end
local why
if not mode then
  mode, why = rw_mode(lock)
  if not mode then
    return redis.error_reply('RLK_WRONGTYPE ' .. why)
  end
end

local writer = owner .. ':write'
if count == nil then
  count = mode == 'write' and redis.call('hget', lock, writer)
end
if not count then
  return nil
end
if (tonumber(count) or 0) > 1 then
  -- Still held: the TTL is never cut (GT; a hold without a TTL keeps none).
  redis.call('hincrby', lock, writer, -1)
  redis.call('pexpire', lock, lease_ms, 'gt')
  return 0
end
local longest = longest_own_read(lock, prefix, owner, reads)
if longest >= 0 then
  head = false
elseif head == nil then
  -- Freed: the first waiting writer leaves the queue (the first write, so a waiters key of
  -- another type is refused with nothing changed).
  head = redis.pcall('lpop', waiters)
end
if type(head) == 'table' then
  return redis.error_reply('RLK_WRONGTYPE waiters key holds a ' .. redis.call('type', waiters).ok
    .. ', not a list')
end
if longest >= 0 then
  redis.call('hdel', lock, writer)
  redis.call('hset', lock, 'mode', 'read')
  -- PEXPIRE 0 would delete the hash while that read's key still exists: keep it 1 ms instead
  redis.call('pexpire', lock, math.max(longest, 1))
else
  redis.call('del', lock)
end
-- Freed with writers queued: the first one is granted (nobody queued, the uncontended path, or a
-- downgrade: no call). Every write comes before the PUBLISH (docs/acl.md).
local granted = head and hand_over(head, waiters, grant, claim_ms, channel, publish)
redis.call(publish, channel, '1')
return granted and 2 or 1
