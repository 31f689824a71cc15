-- The two arguments of a waiter's cancel (reentrant/cancel, rwlock/cancel): the ticket, an integer
-- in 1..67108863, and claim_ms (lib/is_lease). Returns the RLK_BADARG reply, or nil when both are
-- good. Needs lib/is_lease.

local function bad_leave_args(ticket, claim_ms)
  local t = tonumber(ticket)
  if not t or t % 1 ~= 0 or t < 1 or t > 67108863 or tostring(t) ~= ticket then
    return redis.error_reply('RLK_BADARG ticket must be an integer in 1..67108863')
  end
  if not is_lease(claim_ms) then
    return redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
  end
  return nil
end
