-- Reentrant lock, the lock just freed: reserves it for head, the first waiter just popped from the
-- queue (nil: nobody waits), for claim_ms, and returns the targeted wake-up head * 2^26 + next
-- (next: the ticket now first, 0 when none) for the caller to publish BEFORE the standard unlock
-- message 0 (nil when nobody waits). Every subscriber receives the two in that order: an rlk
-- subscriber takes the 0 as covered by the grant (only the named waiters act), Redisson's
-- LockPubSub ignores a number it does not know and wakes on the 0 as always. Publishing is left to
-- the caller so that its PUBLISHes come after its last write (an ACL-refused PUBLISH then means
-- the release itself happened).

local function hand_over(head, waiters, grant, claim_ms)
  if not head then
    return nil
  end
  local nxt = redis.call('lindex', waiters, 0)
  redis.call('set', grant, head, 'PX', claim_ms)
  return string.format('%.0f', tonumber(head) * 67108864 + (tonumber(nxt) or 0))
end
