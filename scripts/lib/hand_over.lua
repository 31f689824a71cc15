-- Reentrant lock, the lock just freed: reserves it for head, the first waiter just popped from the
-- queue (nil: nobody waits), for claim_ms
-- (grant, PX) and publishes the targeted wake-up head * 2^26 + next (the tickets of the first
-- and second waiters; next 0 when none) BEFORE the standard unlock message 0, which every
-- subscriber receives in that order: an rlk subscriber takes the 0 as covered by the grant
-- (only the named waiters act), Redisson's LockPubSub ignores a number it does not know and wakes
-- on the 0 as always. Returns 2 when a waiter was granted, 1 when nobody waits (only 0 published).

local function hand_over(head, waiters, grant, channel, claim_ms)
  if not head then
    redis.call('publish', channel, '0')
    return 1
  end
  local nxt = redis.call('lindex', waiters, 0)
  redis.call('set', grant, head, 'PX', claim_ms)
  redis.call('publish', channel, string.format('%.0f', tonumber(head) * 67108864 + (tonumber(nxt) or 0)))
  redis.call('publish', channel, '0')
  return 2
end
