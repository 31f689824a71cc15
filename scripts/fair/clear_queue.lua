-- name: fair/clear_queue
-- version: 1
-- summary: Empty a fair lock's queue of waiters (dead ones included) and wake each waiter that was in it.
-- redisson: none
-- time: none
-- KEYS[1]: lock - the lock hash; not touched (only its type is checked, as every fair script does)
-- KEYS[2]: queue - waiter list redisson_lock_queue:{lock}, first come first; deleted
-- KEYS[3]: timeouts - zset redisson_lock_timeout:{lock}; waiter -> deadline, ms since the epoch; deleted
-- KEYS[4]: channel - channel prefix redisson_lock__channel:{lock}; a waiter listens on <channel>:<waiter>
-- ARGV[1]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return integer: how many waiters the queue held; 0 published on <channel>:<waiter> for each, in queue order
-- error RLK_BADARG: not exactly 4 keys and 1 argument
-- error RLK_WRONGTYPE: the lock key is not a hash, the queue not a list, or the timeouts not a sorted set
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

-- The RLK_WRONGTYPE reply naming the first of the lock, queue and timeouts keys of another type.
--- @include "lib/fair_wrongtype"

--- @include "lib/publish_cmd"

if #KEYS ~= 4 or #ARGV ~= 1 then
  return redis.error_reply('RLK_BADARG expected 4 keys and 1 argument')
end
local queue, timeouts, channel = KEYS[2], KEYS[3], KEYS[4]
local publish, bad_publish = publish_cmd(ARGV[1])
if not publish then return bad_publish end
-- The keys' types first (a key rlk does not own stays as it is), then the writes. A live rlk or
-- Redisson waiter woken retries at once and queues again; a dead one is gone.
local bad = fair_wrongtype()
if bad then return bad end
local waiters = redis.call('lrange', queue, 0, -1)
redis.call('del', queue, timeouts)
for i = 1, #waiters do
  redis.call(publish, channel .. ':' .. waiters[i], '0')
end
return #waiters
