-- Semaphore with a queue: reads the count of semaphore (lib/load_count: nil when there is no key)
-- and checks that waiters is a list and grant a string, or nothing (RLK_WRONGTYPE), before any
-- write. Returns the count (nil when there is no key), or nil and an error reply.

--- @include "lib/load_count"
--- @include "lib/wrong_type"

local function sem_check(semaphore, waiters, grant)
  local count, err = load_count(semaphore)
  if err then return nil, err end
  local why = wrong_type(waiters, 'list', 'waiters') or wrong_type(grant, 'string', 'grant')
  if why then
    return nil, redis.error_reply('RLK_WRONGTYPE ' .. why)
  end
  return count
end
