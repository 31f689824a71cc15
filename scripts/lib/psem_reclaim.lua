-- Permit-expirable semaphore: the reclaim that opens psemaphore/acquired, available, lease_time
-- and update_lease. Reads the count and checks timeouts (lib/psem_load), reads "now" from the
-- server, refuses (RLK_BADARG) when returning the expired permits would take the count above
-- MAX_COUNT, then returns them to the count (lib/reclaim) and, when some expired and the count
-- is then positive, publishes it on channel with the publish command.
-- Returns now (ms) and the count after reclaiming (0 when there is no key and nothing expired),
-- or nil and an error reply (nothing written).
-- luacheck: read globals MAX_COUNT

--- @include "lib/int"
--- @include "lib/psem_load"
--- @include "lib/now_ms"
--- @include "lib/reclaim"

local function psem_reclaim(semaphore, timeouts, channel, publish)
  local count, err = psem_load(semaphore, timeouts)
  if err then return nil, err end
  local now = now_ms()
  local before = count or 0
  local expired = redis.call('zcount', timeouts, '-inf', int(now))
  if before + expired > MAX_COUNT then
    return nil, redis.error_reply('RLK_BADARG reclaiming expired permits would take the count above 9007199254740991')
  end
  reclaim(semaphore, timeouts, now, expired)
  if expired > 0 and before + expired > 0 then
    redis.call(publish, channel, int(before + expired))
  end
  return now, before + expired
end
