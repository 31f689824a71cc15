-- Fair lock: drops every waiter whose deadline has passed, wherever it is in the queue (due: what
-- ZRANGEBYSCORE timeouts -inf now replied, read by the caller before its first write), then heads
-- that have no deadline at all. head: the head the caller read (false: none). Returns the head
-- now (false: none), its deadline (a number; nil without a head) and whether the head changed.
-- Reads nothing more when nothing is due and the head has a deadline: one ZSCORE.

local function drop_stale(queue, timeouts, due, head)
  local first = head
  if #due > 0 then
    for i = 1, #due do
      redis.call('lrem', queue, 0, due[i])
      redis.call('zrem', timeouts, due[i])
    end
    first = redis.call('lindex', queue, 0)
  end
  while first do
    local deadline = redis.call('zscore', timeouts, first)
    if deadline then
      return first, tonumber(deadline), first ~= head
    end
    redis.call('lpop', queue)
    first = redis.call('lindex', queue, 0)
  end
  return first, nil, first ~= head
end
