-- name: reentrant/release
-- version: 22
-- summary: Leave a reentrant lock once; on the last exit delete it, reserve it for the first waiter, publish.
-- redisson: RedissonLock.unlockInnerAsync (hincrby -1; pexpire while held, else del + publish 0); grant: rlk's
-- time: none
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: channel - unlock channel redisson_lock__channel:{name}
-- KEYS[3]: waiters - list {lock}:rlk_waiters of waiting tickets, first come first
-- KEYS[4]: grant - string {lock}:rlk_next: ticket the free lock is reserved for, PX claim window
-- KEYS[5]: delay - optional: {lock}:rlk_delay, refreshed while held, deleted at last exit; ARGV[5]: {lock}:rlk_who
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[2]: lease_ms - while the owner still holds it, its TTL is at least this (never cut), integer 1..1000000000000
-- ARGV[3]: claim_ms - optional with ARGV[4] (both absent: 50, publish): the first waiter's time to claim, 1..10^12
-- ARGV[4]: publish - optional with ARGV[3]: the publish command: publish, or spublish (Redis 7 sharded pub/sub)
-- ARGV[5]: held - optional (KEYS[5] who, no lock-delay): exactly held: a waiter's record not owner's is granted held
-- return nil: owner does not hold the lock (or there is no lock); nothing changed
-- return 0: still held by owner: count decremented, TTL raised to lease_ms if shorter (none: kept none)
-- return 1: released: the lock key deleted and message 0 (unlock) published on channel; nobody queued
-- return 2: released, reserved for the first waiter (popped) for claim_ms; head*2^26 on its wake channel, then 0
-- return 3: released, written in the first waiter's name (held): "head*2^26+2^25[:<wait>] <owner>" on its wake, no 0
-- error RLK_BADARG: not 4 (or 5) keys and 4 or 2 arguments (held: 5 and 5), or claim_ms not an integer in 1..10^12
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: the lock key is not a hash, waiters not a list, the delay key not a delay's or who not a hash
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local nkeys, nargs = #KEYS, #ARGV
local lock, owner, lease_ms, claim_ms, publish = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
-- The uncontended path, first and on its own: the usual call in its short form (4 keys, 2
-- arguments: the claim window and the publish command left out, 50 and publish, what rlk's clients
-- pass on one server), or in its long form (4 arguments; held grants: 5 keys and 5), with the usual
-- lease and claim window (under 13 digits, one pattern each; the watchdog's default lease '30000'
-- and the claim window '50' by one comparison of interned strings first) and an owner of 1..1024
-- bytes: every argument is one the checks below would accept, so its replies are theirs. The last
-- exit (count '1', what HSET/HINCRBY wrote: no tonumber) with nobody queued deletes the lock and
-- publishes 0, Redisson's four commands; any other count, a waiter popped, or the held form (its
-- first waiter is read before it is popped, below) goes on below with what was read (no command
-- sent twice). Redis builds KEYS and ARGV anew for every call and runs every check on every call:
-- each argument fewer and each check not made is server time saved (docs/performance.md).
local count, head, usual
if nargs == 2 then
  claim_ms, publish = '50', 'publish'
  usual = nkeys == 4 and #owner > 0 and #owner <= 1024
    and (lease_ms == '30000' or #lease_ms < 13 and lease_ms:find('^[1-9]%d*$'))
else
  usual = (nkeys == 4 and nargs == 4 or nkeys == 5 and nargs == 5 and ARGV[5] == 'held')
    and (publish == 'publish' or publish == 'spublish') and #owner > 0 and #owner <= 1024
    and (claim_ms == '50' or #claim_ms < 13 and claim_ms:find('^[1-9]%d*$'))
    and (lease_ms == '30000' or #lease_ms < 13 and lease_ms:find('^[1-9]%d*$'))
end
if usual then
  count = redis.pcall('hget', lock, owner)
  if count == '1' and nkeys == 4 then
    head = redis.pcall('lpop', KEYS[3])
    if not head then
      redis.call('del', lock)
      redis.call(publish, KEYS[2], '0')
      return 1
    end
  end
end
if (nkeys ~= 4 and nkeys ~= 5) or (nargs ~= 4 and nargs ~= 2
    and (nargs ~= 5 or nkeys ~= 5 or ARGV[5] ~= 'held')) then
  return redis.error_reply('RLK_BADARG expected 4 keys and 4 (or 2) arguments (lock-delay: 5 keys; '
    .. 'held: 5 and 5)')
end
local channel, waiters, grant, delay = KEYS[2], KEYS[3], KEYS[4], KEYS[5]
-- Held grants (docs/runtime.md, "Held grants"): ARGV[5] held names KEYS[5] the hash {lock}:rlk_who
-- of the waiters' records (lib/hand_over_held); no lock-delay then.
local who
if delay and ARGV[5] then
  who, delay = delay, nil
end
-- The helpers of the slow paths (an unusual argument, lock-delay) are made only when one is taken:
-- a closure made on every call, even one never called, costs the uncontended release.
local is_lease, publish_cmd, delay_shape, renew_delay
if count == nil then
  -- The arguments, checked in this order: the publish command, the owner, the lease, the claim
  -- window; the usual ones by one pattern over the three.
  usual = #lease_ms < 13 and #claim_ms < 13
    and (lease_ms .. ' ' .. claim_ms .. ' ' .. publish):find('^[1-9]%d* [1-9]%d* s?publish$')
  if not usual or delay then
    -- luacheck: push ignore 431 (the helpers' names and parameters are the values' own)
    is_lease, publish_cmd, delay_shape, renew_delay = (function()
--- @include "lib/is_lease"

--- @include "lib/publish_cmd"

--- @include "lib/delay_shape"

--- @include "lib/renew_delay"
      return is_lease, publish_cmd, delay_shape, renew_delay
    end)()
    -- luacheck: pop
  end
  if not usual then
    local bad_publish
    publish, bad_publish = publish_cmd(publish)
    if not publish then return bad_publish end
  end
  if #owner < 1 or #owner > 1024 then
    return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
  end
  if not usual then
    if not is_lease(lease_ms) then
      return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
    end
    if not is_lease(claim_ms) then
      return redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
    end
  end
  -- Type errors come from the first call that touches a key (no TYPE on the hot path).
  count = redis.pcall('hget', lock, owner)
end
if count and count.err then  -- a string's .err is nil (string library)
  return redis.error_reply('RLK_WRONGTYPE lock key holds a ' .. redis.call('type', lock).ok
    .. ', not a hash')
end
if not count then
  return nil
end
-- A count is what HSET/HINCRBY wrote: '1' is the last exit, without a tonumber on the fast path.
-- Lock-delay: the delay key is read (its shape, lib/delay_shape) before it is refreshed or
-- deleted: an application's value there is refused with nothing changed.
local d
if delay then
  local found
  found, d = delay_shape(delay)
  if found then
    return redis.error_reply('RLK_WRONGTYPE delay key holds ' .. found)
  end
end
if count ~= '1' and tonumber(count) > 1 then
  -- Still held: the TTL is never cut (another process may share the holder id and count on a
  -- longer lease): GT raises it to lease_ms only when that is later, and a hold without a TTL
  -- keeps none. The delay key (its value the delay) then outlives the lock by the delay.
  redis.call('hincrby', lock, owner, -1)
  redis.call('pexpire', lock, lease_ms, 'gt')
  if d then
    renew_delay(delay, lock)
  end
  return 0
end
-- The first waiter leaves the queue: the first write, so a waiters key of another type is refused
-- with nothing changed. Held grants: the first waiter is read first (LINDEX, as many commands as the
-- LPOP it replaces when nobody waits), then its record (HGET, which refuses a who key of another
-- type, nothing written yet; lib/hand_over_held takes the record read here), then it is popped.
-- A head popped by the uncontended path above (4 keys: no held grants) is served as one popped here.
local rec
if not head and not who then
  head = redis.pcall('lpop', waiters)
elseif not head then
  head = redis.pcall('lindex', waiters, '0')
  if head and not head.err then
    rec = redis.pcall('hget', who, head)
    if type(rec) == 'table' then
      return redis.error_reply('RLK_WRONGTYPE who key holds a ' .. redis.call('type', who).ok
        .. ', not a hash')
    end
    redis.call('lpop', waiters)
  end
end
if head and head.err then
  return redis.error_reply('RLK_WRONGTYPE waiters key holds a ' .. redis.call('type', waiters).ok
    .. ', not a list')
end
if delay then
  redis.call('del', lock, delay)  -- released, not lost: no lock-delay
else
  redis.call('del', lock)
end

-- Reserves the freed lock for the first waiter whose client still listens, and wakes it alone;
-- held grants: writes it in that waiter's name. Made only when someone waits: nobody queued is the
-- uncontended path, where a closure made on every call costs the release.
local granted
if head then
  -- luacheck: push ignore 431 (its parameters are named as the values passed)
--- @include "lib/hand_over_held"
  -- luacheck: pop
  local held
  granted, held = hand_over_held(head, lock, waiters, grant, who, claim_ms, channel, publish, rec,
                                 owner)
  -- A held handoff publishes no 0: the lock went from one holder to the next without being free,
  -- and a 0 would only wake Redisson's waiters (and the first rlk waiter) to find it held.
  if held then
    return 3
  end
end
redis.call(publish, channel, '0')
return granted and 2 or 1
