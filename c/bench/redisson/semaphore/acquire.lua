-- name: semaphore/acquire
-- about: benchmark reference floor only, not part of the product and not in the script bundle
-- about: (rlk-scriptcost --kind semaphore). The logic of Redisson 3.x's RSemaphore single try,
-- about: written for rlk's benchmark: no argument or type checks, no queue, no reservation.
-- redisson: RedissonSemaphore.tryAcquireAsync(permits) (get >= permits -> decrby, 1; else 0)
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- ARGV[1]: permits - permits to take
-- return 1: acquired: the count is now count - permits
-- return 0: fewer than permits available, or no semaphore key
-- end

local value = redis.call('get', KEYS[1])
if value ~= false and tonumber(value) >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  return 1
end
return 0
