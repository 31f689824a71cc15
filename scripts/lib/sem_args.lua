-- Semaphore: the checks of a call on KEYS (semaphore, channel, waiters, grant) and ARGV (amount,
-- claim_ms, publish): 4 keys and 3 arguments, the publish command (lib/publish_cmd), the amount
-- (valid(amount), else RLK_BADARG with what), claim_ms (RLK_BADARG), the count (lib/load_count)
-- and what a rise of it would serve (lib/sem_peek: the grant and the queue, each refused when of
-- another type). Returns the count (nil when there is no key), the publish command and the head
-- of the queue when no reservation lives (else false), or nil, nil, nil and an error reply.

--- @include "lib/load_count"
--- @include "lib/sem_peek"
--- @include "lib/is_lease"
--- @include "lib/publish_cmd"

local function sem_args(valid, what)
  if #KEYS ~= 4 or #ARGV ~= 3 then
    return nil, nil, nil, redis.error_reply('RLK_BADARG expected 4 keys and 3 arguments')
  end
  local publish, bad_publish = publish_cmd(ARGV[3])
  if not publish then return nil, nil, nil, bad_publish end
  if not valid(ARGV[1]) then
    return nil, nil, nil, redis.error_reply('RLK_BADARG ' .. what)
  end
  if not is_lease(ARGV[2]) then
    return nil, nil, nil, redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
  end
  local count, err = load_count(KEYS[1])
  if err then return nil, nil, nil, err end
  local _, head, bad = sem_peek(KEYS[3], KEYS[4])
  if bad then return nil, nil, nil, bad end
  return count, publish, head
end
