-- name: fence/expire
-- version: 2
-- summary: Fenced EXPIRE: only with a token not below the fence's highest, which it records.
-- redisson: none
-- time: none
-- KEYS[1]: fence - string key holding the highest token accepted, {tag}:fence beside the data; never expires
-- KEYS[2]: data - the key written, with the same {tag} as the fence key
-- ARGV[1]: token - the fencing token of the writer, decimal integer 1..9007199254740990
-- ARGV[2]: ttl - time to live in seconds, integer 1..1000000000000 (a non-positive TTL would delete: use fence/del)
-- ARGV[3..n]: condition - optional, one of NX XX GT LT (EXPIRE's)
-- return 1: accepted; the time to live was set
-- return 0: accepted (the token recorded); the key does not exist or the condition was not met
-- error RLK_BADARG: a bad token or counts, ttl not in 1..1000000000000, a condition not NX XX GT LT, fence = data key
-- error RLK_CROSSSLOT: the fence key and the data key do not carry the same non-empty {hash tag}
-- error RLK_FENCED: token is below the fence's highest token; the reply is `RLK_FENCED <highest>`; no change
-- error RLK_WRONGTYPE: the fence key is not a string holding a token, or the data key's type is refused
-- error RLK_CMDERR: the data command failed otherwise (its error text follows); no change, no token recorded
-- end

local MAX_TOKEN = 9007199254740991 -- 2^53 - 1: integers above it are not exact in a Lua number

--- @include "lib/fence_expire"

return fence_expire('expire')
