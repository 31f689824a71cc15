-- Semaphore: the release of semaphore/release and semaphore/release_if_exists, on their KEYS
-- (semaphore, channel, waiters, grant) and ARGV (permits, claim_ms, publish). Checks the 4 keys
-- and 3 arguments, the publish command (lib/publish_cmd), permits and claim_ms (RLK_BADARG), the
-- keys' types (RLK_WRONGTYPE: the count's, and the grant's and queue's where a rise reads them,
-- lib/sem_peek) and that the count stays at most MAX_COUNT (RLK_BADARG), then adds
-- permits to the count and, when it is positive, reserves permits for the first waiter it covers
-- unless a reservation lives (the chain: its grantee's claim grants the next), and publishes it.
-- if_exists false: a missing key is created; returns the new count. if_exists true: when there is
-- no key, returns 0 and changes nothing (after the argument and type checks); else returns 1.
-- luacheck: read globals MAX_COUNT

--- @include "lib/is_permits"
--- @include "lib/sem_args"
--- @include "lib/sem_add"
--- @include "lib/sem_rise"

local function sem_release(if_exists)
  local count, publish, head, err = sem_args(is_permits, 'permits must be an integer in 1..1000000000000')
  if err then return err end
  local semaphore, channel, waiters, grant = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
  local permits, claim_ms = ARGV[1], ARGV[2]
  if if_exists and count == nil then
    return 0
  end
  if (count or 0) + tonumber(permits) > MAX_COUNT then
    return redis.error_reply('RLK_BADARG releasing permits would take the count above 9007199254740991')
  end

  local new = sem_add(semaphore, permits)
  if new > 0 then
    sem_rise(new, head, waiters, grant, claim_ms, channel, publish)
  end
  if if_exists then
    return 1
  end
  return new
end
