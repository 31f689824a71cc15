-- name: reentrant/acquire
-- about: benchmark reference floor only, not part of the product and not in the script bundle
-- about: (rlk-bench --baseline --scripts-dir c/bench/redisson; tools/bench-run variant redisson).
-- about: The logic of Redisson 3.x's classic RLock acquire, written for rlk's benchmark: no
-- about: argument checks, no queue, no grant; only what Redisson's own script does.
-- redisson: RedissonLock.tryLockInnerAsync (exists/hexists; hincrby + pexpire; else pttl)
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- ARGV[1]: lease_ms - lease in milliseconds
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>
-- return nil: acquired, or re-entered; the lease reset to lease_ms
-- return integer: held by another owner; the lock's PTTL
-- end

local lock = KEYS[1]
local lease_ms, owner = ARGV[1], ARGV[2]

local mine = redis.call('exists', lock) == 0
if not mine then
  mine = redis.call('hexists', lock, owner) == 1
end
if mine then
  redis.call('hincrby', lock, owner, 1)
  redis.call('pexpire', lock, lease_ms)
  return nil
end
return redis.call('pttl', lock)
