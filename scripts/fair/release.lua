-- name: fair/release
-- version: 7
-- summary: Leave a fair lock once; on the last exit delete it and wake the first waiter on its own channel.
-- redisson: RedissonFairLock.unlockInnerAsync (drop stale head waiters; hincrby -1; del + publish 0 to the head)
-- time: server - now to drop waiters whose deadline has passed (Redisson passes the client's clock)
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: queue - waiter list redisson_lock_queue:{lock}, first come first
-- KEYS[3]: timeouts - zset redisson_lock_timeout:{lock}; waiter -> deadline, ms since the epoch (then dropped)
-- KEYS[4]: channel - channel prefix redisson_lock__channel:{lock}; a waiter listens on <channel>:<waiter>
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[2]: lease_ms - while the owner still holds it, its TTL is at least this (never cut), integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return nil: owner does not hold the lock (or there is no lock); only stale waiters dropped
-- return 0: still held by owner: count decremented, TTL raised to lease_ms if shorter (none: kept none)
-- return 1: released: lock deleted; message 0 (unlock) published on <channel>:<first waiter> if one waits
-- error RLK_BADARG: not exactly 4 keys and 3 arguments
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: the lock key is not a hash, the queue not a list, or the timeouts not a sorted set
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local lock, queue, timeouts, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, lease_ms = ARGV[1], ARGV[2]
-- The usual call (arguments the checks below accept, the usual lease) reads the clock, the waiters
-- due, the queue's head and the caller's count, each key by redis.pcall (a key of another type: the
-- general case below reads again and refuses it). The last exit while nobody waits ends here
-- (DEL), before any helper is made (each a closure made on every call); anything else goes on
-- below with what it read.
local now, due, head, count
if #KEYS == 4 and #ARGV == 3 and (ARGV[3] == 'publish' or ARGV[3] == 'spublish')
  and #owner >= 1 and #owner <= 1024
  and (lease_ms == '30000' or #lease_ms < 13 and lease_ms:find('^[1-9]%d*$')) then
  local clock = redis.call('time')
  local t = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local d = redis.pcall('zrangebyscore', timeouts, '-inf', t)
  local h = redis.pcall('lindex', queue, 0)
  if not d.err and type(h) ~= 'table' then
    local c = redis.pcall('hget', lock, owner)
    if c == '1' and #d == 0 and not h then
      redis.call('del', lock)
      return 1
    end
    if type(c) ~= 'table' then
      now, due, head, count = t, d, h, c
    end
  end
end

-- luacheck: push ignore 431 (their parameters are named as the keys and arguments passed)
--- @include "lib/is_lease"

-- Reads of the lock, queue or timeouts key; a key of another type: nil and RLK_WRONGTYPE.
--- @include "lib/fair_scan"

-- Milliseconds since the epoch by the server's clock.
--- @include "lib/now_ms"

-- Drops every waiter whose deadline has passed, wherever it is in the queue (a live rlk waiter
-- keeps moving its deadline), then head waiters without a deadline: the head and its deadline.
--- @include "lib/drop_stale"

--- @include "lib/publish_cmd"
-- luacheck: pop

if #KEYS ~= 4 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 4 keys and 3 arguments')
end
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
-- Reads first (each key's type checked by them), then writes.
if not now then
  local bad
  due, head, bad = fair_scan(queue, timeouts, now_ms())
  if bad then return bad end
  count, bad = fair_read('hget', lock, owner)
  if bad then return bad end
end
local first = drop_stale(queue, timeouts, due, head)
if not count then
  return nil
end
if count ~= '1' and redis.call('hincrby', lock, owner, -1) > 0 then
  -- Still held: the TTL is never cut (another process may share the holder id); none: kept none.
  redis.call('pexpire', lock, lease_ms, 'gt')
  return 0
end
redis.call('del', lock)
if first then
  redis.call(publish, channel .. ':' .. first, '0')
end
return 1
