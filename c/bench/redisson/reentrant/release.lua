-- name: reentrant/release
-- about: benchmark reference floor only, not part of the product and not in the script bundle
-- about: (rlk-bench --baseline --scripts-dir c/bench/redisson; tools/bench-run variant redisson).
-- about: The logic of Redisson 3.x's classic RLock release, written for rlk's benchmark, with
-- about: Redisson's argument order: no argument checks, no queue; only what Redisson's script does.
-- redisson: RedissonLock.unlockInnerAsync (hincrby -1; pexpire while held, else del + publish)
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: channel - unlock channel redisson_lock__channel:{name}
-- ARGV[1]: message - the unlock message published on the last exit (0)
-- ARGV[2]: lease_ms - lease in milliseconds set while the owner still holds it
-- ARGV[3]: owner - holder id <client-uuid>:<thread-id>
-- ARGV[4]: publish - the publish command: publish or spublish
-- return nil: owner does not hold the lock (or there is no lock); nothing changed
-- return 0: still held by owner: count decremented, lease reset to lease_ms
-- return 1: released: the lock key deleted and message published on channel
-- end

local lock, channel = KEYS[1], KEYS[2]
local message, lease_ms, owner, publish = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

if redis.call('hexists', lock, owner) == 0 then
  return nil
end
local count = redis.call('hincrby', lock, owner, -1)
if count > 0 then
  redis.call('pexpire', lock, lease_ms)
  return 0
end
redis.call('del', lock)
redis.call(publish, channel, message)
return 1
