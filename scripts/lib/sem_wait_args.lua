-- A semaphore acquire's ticket (lib/sem_ticket) and claim window (lib/is_lease) arguments, checked
-- in that order. Returns the ticket t, or nil and the RLK_BADARG reply.

--- @include "lib/sem_ticket"
--- @include "lib/is_lease"

local function sem_wait_args(ticket, claim_ms)
  local t = sem_ticket(ticket)
  if not t then
    return nil, redis.error_reply('RLK_BADARG ticket must be 0 or an integer t with |t| in 33554432..67108863')
  end
  if not is_lease(claim_ms) then
    return nil, redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
  end
  return t
end
