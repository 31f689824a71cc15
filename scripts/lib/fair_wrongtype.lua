-- Fair lock: the RLK_WRONGTYPE reply naming the first of its keys (KEYS[1] the lock hash, KEYS[2]
-- the queue list, KEYS[3] the timeouts zset) that holds another type, or nil when none does. Run
-- only once a read failed (or TYPE showed a lock key of another type): no TYPE per key per call.

--- @include "lib/wrong_type"

local function fair_wrongtype()
  local why = wrong_type(KEYS[1], 'hash', 'lock') or wrong_type(KEYS[2], 'list', 'queue')
    or wrong_type(KEYS[3], 'zset', 'timeouts')
  if why then
    return redis.error_reply('RLK_WRONGTYPE ' .. why)
  end
end
