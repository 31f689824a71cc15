-- Fair lock: drops waiters from the head of the queue while their deadline has passed (or they
-- have none).

local function drop_stale(queue, timeouts, now)
  while true do
    local head = redis.call('lindex', queue, 0)
    if not head then return end
    local deadline = tonumber(redis.call('zscore', timeouts, head))
    if deadline and deadline > now then return end
    redis.call('lpop', queue)
    redis.call('zrem', timeouts, head)
  end
end
