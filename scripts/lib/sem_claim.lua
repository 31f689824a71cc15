-- Semaphore (RSemaphore, RPermitExpirableSemaphore) acquire: reserved is the reservation read at
-- grant (false when none), me the waiter's "<ticket> <permits>" (nil for a single try). When the
-- reservation is me's, it is claimed: deleted (the caller takes its permits, or re-queues when
-- they went). Returns the permits another ticket's reservation holds (0 when none), that
-- reservation (nil when none), and whether me's own reservation was claimed.

local function sem_claim(grant, reserved, me)
  if reserved and reserved == me then
    redis.call('del', grant)
    return 0, nil, true
  elseif reserved then
    return tonumber(string.match(reserved, ' ([0-9]+)$')) or 0, reserved, false
  end
  return 0, nil, false
end
