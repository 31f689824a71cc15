-- name: fenced/release
-- version: 5
-- summary: Leave a fenced lock once; on the last exit delete it and publish the unlock message.
-- redisson: RedissonLock.unlockInnerAsync (hincrby -1; pexpire while held, else del + publish 0)
-- time: none
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: channel - unlock channel redisson_lock__channel:{name}
-- KEYS[3]: token - string key redisson_lock_token:{name} holding the last token issued (kept; never expires)
-- ARGV[1]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- ARGV[2]: lease_ms - the TTL while the owner still holds it: max(PTTL, lease_ms), integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return nil: owner does not hold the lock (or there is no lock); nothing changed
-- return 0: still held by owner: count decremented, TTL max(PTTL, lease_ms) (none kept), token key PERSISTed
-- return 1: released: the lock key deleted and message 0 (unlock) published on channel; token key kept, without a TTL
-- error RLK_BADARG: not exactly 3 keys and 3 arguments
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: the lock key is not a hash, or the token key not a string holding an integer below 2^53-1
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

--- @include "lib/is_lease"

local MAX_TOKEN = 9007199254740991 -- 2^53 - 1: integers above it are not exact in a Lua number

-- The last token a token key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_token"

--- @include "lib/publish_cmd"

if #KEYS ~= 3 or #ARGV ~= 3 then
  return redis.error_reply('RLK_BADARG expected 3 keys and 3 arguments')
end
local lock, channel, token_key, owner, lease_ms = KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2]
local publish, bad_publish = publish_cmd(ARGV[3])
if not publish then return bad_publish end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
local kind = redis.call('type', lock).ok
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('RLK_WRONGTYPE lock key holds a ' .. kind .. ', not a hash')
end
local last, err = load_token(token_key)
if err then return err end

if kind == 'none' or redis.call('hexists', lock, owner) == 0 then
  return nil
end
if last ~= nil then
  redis.call('persist', token_key) -- a TTL left by version 1 of the scripts
end
if redis.call('hincrby', lock, owner, -1) > 0 then
  -- Never shorter: the holds left may be another process's with the same holder id.
  redis.call('pexpire', lock, lease_ms, 'GT')
  return 0
end
redis.call('del', lock)
redis.call(publish, channel, '0')
return 1
