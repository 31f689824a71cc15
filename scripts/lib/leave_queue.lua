-- Reentrant lock, and the read-write lock's writers: the waiter with ticket (its decimal string)
-- gives up and leaves the queue. held: the lock is held (by anyone). Returns:
--   0: the ticket was neither queued nor reserved; nothing changed;
--   1: it left the queue; when it was first and the lock is held, the waiter now first is woken on
--      its wake channel (it listens on the lock's channel only once it learns it is first, and a
--      Redisson holder's release grants nobody);
--   2, handed: the free lock was reserved for it: the reservation is gone and the lock handed to
--      the next waiter (handed: the ticket granted, or false when nobody listening waits; the
--      caller publishes its unlock message after this); 2 and nil when the lock was taken meanwhile
--      (a client that ignores reservations): the next release hands over.
-- Needs lib/hand_over.

local function leave_queue(waiters, grant, ticket, held, claim_ms, channel, publish)
  local was_first = redis.call('lindex', waiters, 0) == ticket
  local removed = redis.call('lrem', waiters, 0, ticket)
  if redis.call('get', grant) ~= ticket then
    if was_first and held then
      local nxt = tonumber(redis.call('lindex', waiters, 0))
      if nxt and nxt >= 33554432 then    -- a waiter on its wake channel (lib/hand_over)
        redis.call(publish, channel .. ':rlk:' .. string.format('%d', math.floor(nxt / 1024)),
                   string.format('%.0f', nxt * 67108864))
      end
    end
    return removed > 0 and 1 or 0
  end
  redis.call('del', grant)
  if held then
    return 2
  end
  return 2, hand_over(redis.call('lpop', waiters), waiters, grant, claim_ms, channel, publish) or false
end
