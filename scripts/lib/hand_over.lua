-- Reentrant lock, the lock just freed: hands it to the first waiter of the queue. head is the
-- ticket just popped (nil: nobody waits). The lock is reserved for the ticket t for claim_ms, and
-- the grant is published (docs/runtime.md, "Who a handoff wakes"):
--   t >= 2^25: its client listens on its own wake channel, channel .. ':rlk:' .. floor(t / 1024)
--     (the same {name} tag, so the same cluster slot); the grant t * 2^26 goes there and wakes that
--     one client. A grant that reaches no subscriber names a waiter whose client is gone (killed:
--     the server dropped its connection and subscriptions): that ticket is dropped and the next one
--     popped, at most 16 times, after which the lock is left free and unreserved;
--   t < 2^25: a client whose count of subscribers is not exact (a cluster with PUBLISH, where a node
--     counts its own subscribers only) listens on channel itself: the grant t * 2^26 + next (the
--     ticket now first, 0 if none) goes there, as before release v4, and nobody is dropped.
-- Returns the ticket granted, or nil. The caller publishes the standard unlock message 0 on channel
-- after this, for Redisson's waiters and for the rlk waiter that listens there. The grants go out
-- with redis.pcall: one refused (ACL) keeps its ticket, and the caller's 0, refused too, raises
-- after every write (the release itself happened).

local function hand_over(head, waiters, grant, claim_ms, channel, publish)
  local reserved = false
  for _ = 1, 16 do
    if not head then
      break
    end
    local t = tonumber(head)
    if t and t >= 1 and t % 1 == 0 then
      redis.call('set', grant, head, 'PX', claim_ms)
      reserved = true
      if t < 33554432 then
        local nxt = tonumber(redis.call('lindex', waiters, 0)) or 0
        redis.pcall(publish, channel, string.format('%.0f', t * 67108864 + nxt))
        return head
      end
      local n = redis.pcall(publish, channel .. ':rlk:' .. string.format('%d', math.floor(t / 1024)),
                            string.format('%.0f', t * 67108864))
      if type(n) ~= 'number' or n > 0 then
        return head
      end
    end
    head = redis.call('lpop', waiters)
  end
  if reserved then
    redis.call('del', grant)
  end
  return nil
end
