-- Fair lock: the reads every fair script starts with, before its first write: due, the waiters
-- whose deadline has passed (ZRANGEBYSCORE timeouts -inf now), and head, the queue's first waiter
-- (false: none). A key of another type: nil, nil and the RLK_WRONGTYPE reply (fair_read).

--- @include "lib/fair_read"

local function fair_scan(queue, timeouts, now)
  local due, bad = fair_read('zrangebyscore', timeouts, '-inf', now)
  if bad then
    return nil, nil, bad
  end
  local head
  head, bad = fair_read('lindex', queue, 0)
  if bad then
    return nil, nil, bad
  end
  return due, head
end
