-- Fair lock: the usual acquire (fair/acquire, fair/nonreentrant_acquire), before the general case's
-- helpers are made (each a closure made on every call). With arguments the checks of lib/fair_acquire
-- accept (the usual lease and wait under 13 digits), it reads the clock, the waiters whose deadline
-- has passed and the queue's head (redis.pcall: a key of another type ends it with nothing read,
-- for the general case to refuse), and when nobody is due or queued, the lock's PTTL; a free lock
-- is then taken: ZREM, HSET, PEXPIRE, as the general case does. Returns true when taken; otherwise
-- false and what it read for lib/fair_acquire (now, due, head, and pttl when read), or nil.

local function fair_take()
  local lease_ms, owner, wait_ms = ARGV[1], ARGV[2], ARGV[3]
  if #KEYS ~= 3 or #ARGV ~= 3 or #owner < 1 or #owner > 1024
    or not (lease_ms == '30000' or #lease_ms < 13 and lease_ms:find('^[1-9]%d*$'))
    or #wait_ms >= 13 or not wait_ms:find('^[1-9]%d*$') then
    return nil
  end
  local clock = redis.call('time')
  local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local due = redis.pcall('zrangebyscore', KEYS[3], '-inf', now)
  local head = redis.pcall('lindex', KEYS[2], 0)
  if due.err or type(head) == 'table' then
    return nil
  end
  if #due > 0 or head then
    return false, now, due, head
  end
  local pttl = redis.call('pttl', KEYS[1])
  if pttl ~= -2 then
    return false, now, due, head, pttl
  end
  redis.call('zrem', KEYS[3], owner)
  redis.call('hset', KEYS[1], owner, '1')
  redis.call('pexpire', KEYS[1], lease_ms)
  return true
end
