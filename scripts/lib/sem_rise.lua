-- Semaphore: after the count rose to new (> 0), reserves permits for the first waiter it covers
-- unless a reservation lives (the chain: its grantee's claim grants the next), and publishes the
-- new count on channel.

--- @include "lib/sem_grant"

local function sem_rise(new, waiters, grant, claim_ms, channel, publish)
  if redis.call('exists', grant) == 0 then
    sem_grant(waiters, grant, new, claim_ms, channel, publish)
  end
  redis.call(publish, channel, string.format('%.0f', new))
end
