-- Permit-expirable semaphore: reads the count of semaphore (lib/load_count: nil when there is no
-- key) and checks that timeouts is a sorted set or nothing (RLK_WRONGTYPE), before any write.
-- Returns the count (nil when there is no key), or nil and an error reply.

--- @include "lib/load_count"

local function psem_load(semaphore, timeouts)
  local count, err = load_count(semaphore)
  if err then return nil, err end
  local tkind = redis.call('type', timeouts).ok
  if tkind ~= 'none' and tkind ~= 'zset' then
    return nil, redis.error_reply('RLK_WRONGTYPE timeouts key holds a ' .. tkind .. ', not a zset')
  end
  return count
end
