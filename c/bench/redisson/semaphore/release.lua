-- name: semaphore/release
-- about: benchmark reference floor only, not part of the product and not in the script bundle
-- about: (rlk-scriptcost --kind semaphore). The logic of Redisson 3.x's RSemaphore release,
-- about: written for rlk's benchmark; it returns the new count, which Redisson's script does
-- about: not, so that the benchmark can check each release.
-- redisson: RedissonSemaphore.releaseAsync(permits) (incrby, publish the new count)
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: channel - wake-up channel redisson_sc:{name}
-- ARGV[1]: permits - permits to give back
-- ARGV[2]: publish - the publish command: publish or spublish
-- return integer: the new count, published on channel
-- end

local value = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], value)
return value
