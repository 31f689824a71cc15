-- Permit-expirable semaphore: the end of psemaphore/add_permits and set_permits. When the new
-- count rose above the count before the call (before) and is positive: unless a reservation
-- lives, reserves permits for the first waiter the count covers (lib/sem_grant), then publishes
-- the new count on channel, as a release does.

--- @include "lib/int"
--- @include "lib/sem_grant"

local function psem_rise(new, before, waiters, grant, claim_ms, channel, publish)
  if new > before and new > 0 then
    if redis.call('exists', grant) == 0 then
      sem_grant(waiters, grant, new, claim_ms, channel, publish)
    end
    redis.call(publish, channel, int(new))
  end
end
