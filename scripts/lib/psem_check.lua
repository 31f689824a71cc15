-- Permit-expirable semaphore with a queue: lib/psem_load on semaphore and timeouts, then checks
-- that waiters is a list and grant a string, or nothing (RLK_WRONGTYPE), before any write.
-- Returns the count (nil when there is no key), or nil and an error reply.

--- @include "lib/psem_load"
--- @include "lib/wrong_type"

local function psem_check(semaphore, timeouts, waiters, grant)
  local count, err = psem_load(semaphore, timeouts)
  if err then return nil, err end
  local why = wrong_type(waiters, 'list', 'waiters') or wrong_type(grant, 'string', 'grant')
  if why then
    return nil, redis.error_reply('RLK_WRONGTYPE ' .. why)
  end
  return count
end
