-- name: fenced/acquire
-- version: 6
-- summary: Acquire or re-enter a fenced lock and issue a fencing token larger than every token issued before.
-- redisson: RedissonFencedLock.tryLockInnerAsync (free or own -> incr token, hincrby, pexpire, {-1, token})
-- time: server - a token is at least TIME in microseconds, so tokens keep rising even if the token key was lost
-- KEYS[1]: lock - the lock hash; field <owner> -> reentry count
-- KEYS[2]: token - string key redisson_lock_token:{name} holding the last token issued; never expires (as Redisson's)
-- ARGV[1]: lease_ms - lease in milliseconds, integer 1..1000000000000; a re-entry never shortens the TTL
-- ARGV[2]: owner - holder id <client-uuid>:<thread-id>, 1..1024 bytes
-- return array: acquired or re-entered: {token}, the new fencing token max(last + 1, TIME in us)
-- return integer: not acquired; the holder's remaining time to live in ms (PTTL, -1 if it has none); no token
-- error RLK_BADARG: not exactly 2 keys and 2 arguments
-- error RLK_BADLEASE: lease_ms is not an integer in 1..1000000000000
-- error RLK_BADOWNER: owner is empty or longer than 1024 bytes
-- error RLK_WRONGTYPE: lock key not a lock's (lib/lock_shape), or token key not a string holding an integer < 2^53-1
-- end

--- @include "lib/is_lease"

local MAX_TOKEN = 9007199254740991 -- 2^53 - 1: integers above it are not exact in a Lua number

--- @include "lib/fenced_take"

if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 2 arguments')
end
local lease_ms, owner = ARGV[1], ARGV[2]
if not is_lease(lease_ms) then
  return redis.error_reply('RLK_BADLEASE lease_ms must be an integer in 1..1000000000000')
end
if #owner < 1 or #owner > 1024 then
  return redis.error_reply('RLK_BADOWNER owner must be 1..1024 bytes')
end
return fenced_take(KEYS[1], KEYS[2], lease_ms, owner, nil)
