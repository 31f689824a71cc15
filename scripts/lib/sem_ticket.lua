-- A semaphore waiter's ticket argument: '0' (a single try, never queued) gives 0; an integer t
-- with |t| in 33554432..67108863 (2^25..2^26-1: cid * 1024 + r, lib/sem_grant) gives t. Anything
-- else gives nil.

local function sem_ticket(s)
  if s == '0' then
    return 0
  end
  local t = tonumber(s)
  if not t or t % 1 ~= 0 or tostring(t) ~= s then
    return nil
  end
  local a = t < 0 and -t or t
  if a < 33554432 or a > 67108863 then
    return nil
  end
  return t
end
