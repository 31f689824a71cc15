-- Reentrant lock, the lock just freed: hands it to the first waiter of the queue. head is the
-- ticket just popped (nil: nobody waits). The waiter of ticket t listens on its client's own wake
-- channel, channel .. ':rlk:' .. floor(t / 1024) (the same {name} tag, so the same cluster slot),
-- so the grant, t * 2^26, is published there and wakes that one client; nobody else hears it
-- (docs/runtime.md, "Who a handoff wakes"). The lock is reserved for t for claim_ms first. A
-- grant that reaches no subscriber names a waiter whose client is gone (killed: the server
-- dropped its connection and subscriptions): that ticket is dropped and the next one popped, at
-- most 16 times, after which the lock is left free and unreserved (on a cluster with PUBLISH, whose
-- count is the node's own subscribers only, nobody is dropped). Returns the ticket granted, or
-- nil. The caller publishes the standard unlock message 0 on channel after this, for Redisson's
-- waiters and for the rlk waiter that listens there (the first in the queue). A PUBLISH refused
-- (ACL) raises after the lock was deleted: the release itself happened.

local function hand_over(head, waiters, grant, claim_ms, channel, publish)
  local reserved, counted = false, nil
  local function heard(n)
    if n > 0 then return true end
    if publish == 'spublish' then return false end
    if counted == nil then    -- asked once, and only when a grant reached nobody
      local info = redis.pcall('info', 'cluster')
      counted = type(info) ~= 'string' or not string.find(info, 'cluster_enabled:1', 1, true)
    end
    return not counted
  end
  for _ = 1, 16 do
    if not head then
      break
    end
    local t = tonumber(head)
    if t and t >= 1 and t % 1 == 0 then
      redis.call('set', grant, head, 'PX', claim_ms)
      reserved = true
      if heard(redis.call(publish, channel .. ':rlk:' .. string.format('%d', math.floor(t / 1024)),
                          string.format('%.0f', t * 67108864))) then
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
