-- Semaphore: after the count rose to new (> 0), reserves permits for the first waiter it covers
-- when head (lib/sem_peek: the queue's first entry, read while no reservation lived) is set (a
-- reservation that lives makes the chain: its grantee's claim grants the next), and publishes the
-- new count on channel.

--- @include "lib/sem_grant"

local function sem_rise(new, head, waiters, grant, claim_ms, channel, publish)
  if head then
    sem_grant(waiters, grant, new, claim_ms, channel, publish)
  end
  redis.call(publish, channel, string.format('%.0f', new))
end
