-- name: latch/expire
-- version: 2
-- summary: Give an armed latch's key a time to live: when it runs out the latch opens; wakes awaiters to re-read.
-- redisson: none (RCountDownLatch is not RExpirable in Redisson 4.7; rlk's PEXPIRE on the key)
-- time: none
-- KEYS[1]: latch - a string key holding the remaining count; no key means count 0 (open)
-- KEYS[2]: channel - latch channel redisson_countdownlatch__channel__{name}
-- ARGV[1]: ttl_ms - the time to live in ms, integer 1..1000000000000 (replaces any TTL the key had)
-- ARGV[2]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 1: the latch is armed and its key now expires in ttl_ms; message 1 (count still armed) published on channel
-- return 0: there is no key (the latch is open); nothing changed, nothing published
-- error RLK_BADARG: not exactly 2 keys and 2 arguments
-- error RLK_BADLEASE: ttl_ms is not an integer in 1..1000000000000
-- error RLK_WRONGTYPE: the latch key is not a string holding a count (lib/count_shape)
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

-- The latch opens when the key expires, and an expiry publishes nothing: an awaiter bounds its
-- sleep by the key's TTL (latch/ttl). Message 1 ("armed", Redisson's NEW_COUNT_MESSAGE: its
-- awaiters keep waiting) wakes the awaiters that went to sleep before the TTL existed, so they
-- read it.

--- @include "lib/is_lease"

--- @include "lib/count_shape"

--- @include "lib/publish_cmd"

--- @include "lib/expire_keys"

if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('RLK_BADARG expected 2 keys and 2 arguments')
end
local latch, channel, ttl_ms = KEYS[1], KEYS[2], ARGV[1]
local publish, bad_publish = publish_cmd(ARGV[2])
if not publish then return bad_publish end
if not is_lease(ttl_ms) then
  return redis.error_reply('RLK_BADLEASE ttl_ms must be an integer in 1..1000000000000')
end
local why = count_shape(latch, 'latch')
if why then
  return redis.error_reply('RLK_WRONGTYPE ' .. why)
end

if expire_keys({ latch }, ttl_ms) == 0 then
  return 0
end
redis.call(publish, channel, '1')
return 1
