-- name: reentrant/force_release
-- version: 5
-- summary: Delete a reentrant lock whoever holds it and publish the unlock message.
-- redisson: RedissonLock.forceUnlockAsync (del -> publish 0, 1; else 0)
-- time: none
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: channel - unlock channel redisson_lock__channel:{name}
-- KEYS[3]: delay - optional (lock-delay): string {lock}:rlk_delay: deleted too (the delay ends)
-- ARGV[1]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- ARGV[2]: named - optional: 'named' when the operator named the kind, so a lock's hash without a TTL goes too
-- return 1: the lock key deleted and message 0 (unlock) published on channel
-- return 0: there was no lock (nor delay key); nothing published
-- return 2: no lock, but a lost one's delay key: deleted and message 0 published (the delay ends)
-- error RLK_BADARG: not 2 keys (or 3) and 1 argument (or 2), or named not 'named'
-- error RLK_WRONGTYPE: the lock key not a lock's (lib/lock_shape; no TTL: unless named), the delay key not a delay's
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

--- @include "lib/publish_cmd"

--- @include "lib/lock_shape"

--- @include "lib/is_lease"

--- @include "lib/delay_shape"

if (#KEYS ~= 2 and #KEYS ~= 3) or (#ARGV ~= 1 and #ARGV ~= 2) then
  return redis.error_reply('RLK_BADARG expected 2 keys and 1 argument (lock-delay: 3 keys; named: 2 arguments)')
end
if ARGV[2] and ARGV[2] ~= 'named' then
  return redis.error_reply('RLK_BADARG named must be exactly named')
end
local lock, channel, delay = KEYS[1], KEYS[2], KEYS[3]
local publish, bad_publish = publish_cmd(ARGV[1])
if not publish then return bad_publish end
-- A destructive action: the key's shape is read every time (a key rlk does not own stays as it is).
local found, unsure = lock_shape(lock)
if found or (unsure and not ARGV[2]) then
  return redis.error_reply('RLK_WRONGTYPE lock key holds ' .. (found or unsure
    .. ': name the kind to remove it'))
end
-- The delay key too (lib/delay_shape), named or not: 'named' speaks of the lock's kind, and an
-- application's value at {lock}:rlk_delay is no lock-delay of rlk's.
if delay then
  local bad_delay = delay_shape(delay)
  if bad_delay then
    return redis.error_reply('RLK_WRONGTYPE delay key holds ' .. bad_delay)
  end
end
local kind = redis.call('type', lock).ok

if kind == 'none' then
  -- A lost lock's delay: ended, and the waiters it keeps out try again at once (below).
  if not (delay and redis.call('del', delay) == 1) then
    return 0
  end
elseif delay then
  redis.call('del', lock, delay)
else
  redis.call('del', lock)
end
redis.call(publish, channel, '0')
return kind == 'none' and 2 or 1
