-- Fair lock: the acquire of fair/acquire and fair/nonreentrant_acquire, on their KEYS (lock, queue,
-- timeouts) and ARGV (lease_ms, owner, wait_ms). Checks the 3 keys and 3 arguments (RLK_BADARG,
-- RLK_BADLEASE, RLK_BADOWNER), reads each key before the first write (a key of another type:
-- RLK_WRONGTYPE), drops the waiters whose deadline has passed (lib/drop_stale), then takes the
-- lock when it is free and the caller is first in the queue (or nobody queues), re-enters it when
-- the caller holds it, or queues the caller with the deadline now + wait_ms (a waiter that stops
-- calling, because it died, is dropped wait_ms after its last call, wherever it stands).
-- Returns the script's reply: nil (acquired or re-entered), the ms to wait (first in the queue:
-- the holder's PTTL, -1 for none; behind the head: until the head's deadline), or an error reply.
-- reentrant false: a caller that holds the lock is not re-entered; the function returns nil, true
-- before any write (Redisson checks after dropping stale waiters) and the script refuses. now, due,
-- head, pttl: what lib/fair_take read already (now nil: nothing; pttl nil: not the PTTL), not read
-- again.

--- @include "lib/is_lease"
--- @include "lib/fair_scan"
--- @include "lib/now_ms"
--- @include "lib/drop_stale"
--- @include "lib/lock_shape"

local function fair_acquire(reentrant, now, due, head, pttl)
  if #KEYS ~= 3 or #ARGV ~= 3 then
    return redis.error_reply('RLK_BADARG expected 3 keys and 3 arguments')
  end
  local lock, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
  local lease_ms, owner, wait_ms = ARGV[1], ARGV[2], ARGV[3]
  if not is_lease(lease_ms) then
    return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
  end
  if #owner < 1 or #owner > 1024 then
    return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
  end
  if not is_lease(wait_ms) then
    return redis.error_reply('RLK_BADARG wait_ms must be an integer in 1..1000000000000')
  end
  -- Reads first (each key's type checked by them), then writes. pttl: the lock's PTTL (-2: free),
  -- read when the caller may take it; held: whether the caller holds it (not read when free).
  local bad, held
  if not now then
    now = now_ms()
    due, head, bad = fair_scan(queue, timeouts, now)
    if bad then return bad end
  end
  held = 0
  if pttl == nil and (not head or head == owner) then
    pttl = redis.call('pttl', lock)
  end
  if pttl ~= -2 then
    held, bad = fair_read('hexists', lock, owner)
    if bad then return bad end
  end
  -- Not the caller's and no TTL (a live lock always has one): a key rlk does not own?
  if held == 0 and pttl ~= -2 and (pttl or redis.call('pttl', lock)) == -1 then
    local found = lock_shape(lock)
    if found then
      return redis.error_reply('RLK_WRONGTYPE lock key holds ' .. found)
    end
  end
  if held == 1 and not reentrant then
    return nil, true
  end
  local first, first_deadline = drop_stale(queue, timeouts, due, head)
  if not first or first == owner then
    pttl = pttl or redis.call('pttl', lock)
    if pttl == -2 then
      if first then
        redis.call('lpop', queue)
      end
      redis.call('zrem', timeouts, owner)
      redis.call('hset', lock, owner, '1')
      redis.call('pexpire', lock, lease_ms)
      return nil
    end
  end
  if held == 1 then
    -- A re-entry never shortens the hold (the holder id may be shared by several processes):
    -- GT raises the TTL to lease_ms only when that is later; a hold without a TTL keeps none.
    redis.call('hincrby', lock, owner, 1)
    redis.call('pexpire', lock, lease_ms, 'gt')
    return nil
  end
  if redis.call('zadd', timeouts, now + tonumber(wait_ms), owner) == 1 then
    redis.call('rpush', queue, owner)
  end
  if not first or first == owner then
    return pttl
  end
  -- Behind the head: retry at the head's deadline at the latest (when a dead head is dropped).
  return first_deadline - now
end
