-- name: reentrant/force_release
-- version: 2
-- summary: Delete a reentrant lock whoever holds it and publish the unlock message.
-- redisson: RedissonLock.forceUnlockAsync (del -> publish 0, 1; else 0)
-- time: none
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: channel - unlock channel redisson_lock__channel:{name}
-- ARGV[1]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 1: the lock key deleted and message 0 (unlock) published on channel
-- return 0: there was no lock; nothing published
-- error RLK_BADARG: not exactly 2 keys and 1 argument
-- error RLK_WRONGTYPE: the lock key holds a value that is not a hash
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

--- @include "lib/publish_cmd"

if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 1 argument')
end
local lock, channel = KEYS[1], KEYS[2]
local publish, bad_publish = publish_cmd(ARGV[1])
if not publish then return bad_publish end
local kind = redis.call('type', lock).ok
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('RLK_WRONGTYPE lock key holds a ' .. kind .. ', not a hash')
end

if kind == 'none' then
  return 0
end
redis.call('del', lock)
redis.call(publish, channel, '0')
return 1
