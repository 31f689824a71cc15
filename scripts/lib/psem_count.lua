-- Permit-expirable semaphore: the read of psemaphore/acquired and psemaphore/available, on their
-- KEYS (semaphore, timeouts, channel) and ARGV (publish). Checks the 3 keys and 1 argument
-- (RLK_BADARG) and the publish command (lib/publish_cmd), reclaims expired permits
-- (lib/psem_reclaim), then returns the permits held (held true: the entries of timeouts) or the
-- count after reclaiming (held false), or the error reply.

--- @include "lib/publish_cmd"
--- @include "lib/psem_reclaim"

local function psem_count(held)
  if #KEYS ~= 3 or #ARGV ~= 1 then
    return redis.error_reply('RLK_BADARG expected 3 keys and 1 argument')
  end
  local semaphore, timeouts, channel = KEYS[1], KEYS[2], KEYS[3]
  local publish, bad_publish = publish_cmd(ARGV[1])
  if not publish then return bad_publish end
  local now, available = psem_reclaim(semaphore, timeouts, channel, publish)
  if not now then return available end
  if held then
    return redis.call('zcard', timeouts)
  end
  return available
end
