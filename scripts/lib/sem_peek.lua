-- Semaphore, before its count may rise: whether a reservation lives at grant (read by GET), and
-- when none does, the first waiter of the queue waiters (LINDEX), whom lib/sem_grant serves. A
-- grant or waiters key of another type is refused by the read that touches it (redis.pcall; TYPE
-- only then, for the message): the queue is not read while a reservation lives, as no grant is
-- made then. Returns reserved (true or false) and head (the first entry, or false), or nil, nil
-- and an error reply.

--- @include "lib/wrong_type"

local function sem_peek(waiters, grant)
  local reserved = redis.pcall('get', grant)
  if type(reserved) == 'table' then
    return nil, nil, redis.error_reply('RLK_WRONGTYPE ' .. wrong_type(grant, 'string', 'grant'))
  end
  if reserved then
    return true, false
  end
  local head = redis.pcall('lindex', waiters, 0)
  if type(head) == 'table' then
    return nil, nil, redis.error_reply('RLK_WRONGTYPE ' .. wrong_type(waiters, 'list', 'waiters'))
  end
  return false, head
end
