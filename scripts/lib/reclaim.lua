-- Permit-expirable semaphore: returns expired permits to the count (the caller has checked the sum
-- stays in range).
--- @include "lib/int"

local function reclaim(semaphore, timeouts, now, expired)
  if expired > 0 then
    redis.call('zremrangebyscore', timeouts, '-inf', int(now))
    redis.call('incrby', semaphore, expired)
  end
end
