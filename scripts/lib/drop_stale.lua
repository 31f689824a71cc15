-- Fair lock: drops every waiter whose deadline has passed, wherever it is in the queue, then
-- heads that have no deadline at all. Returns true when the head changed.

local function drop_stale(queue, timeouts, now)
  local before = redis.call('lindex', queue, 0)
  local due = redis.call('zrangebyscore', timeouts, '-inf', now)
  for i = 1, #due do
    redis.call('lrem', queue, 0, due[i])
    redis.call('zrem', timeouts, due[i])
  end
  while true do
    local head = redis.call('lindex', queue, 0)
    if not head or redis.call('zscore', timeouts, head) then
      return head ~= before
    end
    redis.call('lpop', queue)
  end
end
