-- Fair lock: one read of its keys (lock hash, queue list, timeouts zset) by redis.pcall, so that a
-- key of another type is found by the script's own reads rather than by a TYPE per key per call.
-- Returns the reply, or nil and the error reply: RLK_WRONGTYPE naming the first of the three keys
-- that holds another type (fair_wrongtype), else the error itself. Every fair script reads each
-- key it writes this way before its first write (an absent lock key needs no check), using only
-- commands the scripts used before (docs/acl.md).

--- @include "lib/fair_wrongtype"

local function fair_read(...)
  local r = redis.pcall(...)
  if type(r) ~= 'table' or not r.err then
    return r
  end
  return nil, fair_wrongtype() or r
end
