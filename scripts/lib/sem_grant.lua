-- Semaphore (RSemaphore, RPermitExpirableSemaphore), permits just freed: reserves them for the
-- first waiter of the queue when avail (the count no reservation holds) covers its request, and
-- wakes it alone. Queue entries and the reservation are "<ticket> <permits>" (docs/runtime.md,
-- "The semaphores' queue"). The reservation moves no permit: while the key grant lives (claim_ms),
-- every other acquire sees the count less its permits; the grantee's acquire takes them and
-- grants the next head (one reservation at a time). The grant, ticket * 2^26, goes to the
-- grantee's wake channel, channel .. ':rlk:' .. floor(ticket / 1024) (the same {name} tag). A grant
-- that reaches no subscriber names a waiter whose client is gone: its reservation is dropped and
-- the next head tried, at most 16 times. An entry that is not "<ticket> <permits>" with a ticket
-- in 2^25..2^26-1 is dropped. Stops at the first head avail does not cover (first come, first
-- served). The grant goes out with redis.pcall: one refused (ACL) keeps its reservation.
-- Returns the entry granted, or nil.

local function sem_grant(waiters, grant, avail, claim_ms, channel, publish)
  for _ = 1, 16 do
    local head = redis.call('lindex', waiters, 0)
    if not head then
      return nil
    end
    local ts, ns = string.match(head, '^([1-9][0-9]*) ([1-9][0-9]*)$')
    local t, n = tonumber(ts), tonumber(ns)
    if t and n and n > avail then
      return nil
    end
    redis.call('lpop', waiters)
    if t and n and t >= 33554432 and t < 67108864 then
      redis.call('set', grant, head, 'PX', claim_ms)
      local got = redis.pcall(publish, channel .. ':rlk:' .. string.format('%d', math.floor(t / 1024)),
                              string.format('%.0f', t * 67108864))
      if type(got) ~= 'number' or got > 0 then
        return head
      end
      redis.call('del', grant)
    end
  end
  return nil
end
