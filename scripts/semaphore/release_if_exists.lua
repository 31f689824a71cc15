-- name: semaphore/release_if_exists
-- version: 5
-- summary: Give permits back to a semaphore only while its key exists (never re-creating one that expired).
-- redisson: RedissonSemaphore.releaseIfExistsAsync(permits) (exists == 0 -> 0; incrby, publish, 1); grant: rlk's
-- time: none
-- KEYS[1]: semaphore - a string key holding the number of available permits
-- KEYS[2]: channel - wake-up channel redisson_sc:{name}; grants go to <channel>:rlk:<ticket/1024>
-- KEYS[3]: waiters - list {name}:rlk_waiters of waiting "<ticket> <permits>", first come first
-- KEYS[4]: grant - string {name}:rlk_next: the "<ticket> <permits>" permits are reserved for, PX claim window
-- ARGV[1]: permits - permits to give back, integer 1..1000000000000
-- ARGV[2]: claim_ms - how long the first waiter granted has to claim, integer 1..1000000000000
-- ARGV[3]: publish - the publish command: publish, or spublish (Redis 7 sharded pub/sub), as Redisson 4.7 passes it
-- return 1: released: count + permits (TTL kept); when > 0, the first waiter it covers granted, count published
-- return 0: there is no semaphore key (never set, deleted or expired); nothing changed, nothing published
-- error RLK_BADARG: not exactly 4 keys and 3 arguments, permits or claim_ms out of range, or overflow
-- error RLK_WRONGTYPE: semaphore key not an integer string, grant not a string, waiters not a list (read: no grant)
-- error RLK_BADPUBLISH: publish is not exactly publish or spublish
-- end

local MAX_COUNT = 9007199254740991

--- @include "lib/sem_release"

return sem_release(true)
