-- Permit-expirable semaphore: the resize of psemaphore/add_permits and psemaphore/set_permits, on
-- their KEYS (semaphore, timeouts, channel, waiters, grant) and ARGV (amount, claim_ms, publish).
-- Checks the 5 keys and 3 arguments, the publish command (lib/publish_cmd), the amount
-- (valid(amount), else RLK_BADARG with what), claim_ms (RLK_BADARG) and the keys (lib/psem_check).
-- target(before, expired, amount, timeouts) gives the new count (before: the count, 0 without a
-- key; expired: the held permits whose time passed by now); beyond +-(2^53-1) it is refused
-- (RLK_BADARG, the message starting with beyond). Then the expired permits are reclaimed, the
-- count moved to the new one (INCRBY: with always even by 0, else only on a change or to create
-- the key), and a rise grants the first waiter and publishes (lib/psem_rise). Returns the new
-- count or an error reply.
-- luacheck: read globals MAX_COUNT

--- @include "lib/int"
--- @include "lib/psem_check"
--- @include "lib/now_ms"
--- @include "lib/reclaim"
--- @include "lib/publish_cmd"
--- @include "lib/is_lease"
--- @include "lib/psem_rise"

local function psem_resize(valid, what, target, beyond, always)
  if #KEYS ~= 5 or #ARGV ~= 3 then
    return redis.error_reply('RLK_BADARG expected 5 keys and 3 arguments')
  end
  local semaphore, timeouts, channel, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
  local amount, claim_ms = ARGV[1], ARGV[2]
  local publish, bad_publish = publish_cmd(ARGV[3])
  if not publish then return bad_publish end
  if not valid(amount) then
    return redis.error_reply('RLK_BADARG ' .. what)
  end
  if not is_lease(claim_ms) then
    return redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
  end
  local count, err = psem_check(semaphore, timeouts, waiters, grant)
  if err then return err end
  local now = now_ms()
  local before = count or 0
  local expired = redis.call('zcount', timeouts, '-inf', int(now))
  local new = target(before, expired, amount, timeouts)
  if before + expired > MAX_COUNT or math.abs(new) > MAX_COUNT then
    return redis.error_reply('RLK_BADARG ' .. beyond .. ' would take the count beyond +-9007199254740991')
  end

  reclaim(semaphore, timeouts, now, expired)
  local delta = new - (before + expired)
  if always or count == nil or delta ~= 0 then
    redis.call('incrby', semaphore, int(delta))
  end
  psem_rise(new, before, waiters, grant, claim_ms, channel, publish)
  return new
end
