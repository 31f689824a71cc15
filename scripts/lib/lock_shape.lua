-- The shape of an exclusive lock's hash (reentrant, fair, fenced, non-reentrant and spin lock, the
-- election's lock), the one rule every script applies before it writes, renews, expires or deletes a
-- key that is not the caller's (docs/cli.md, "Keys rlk does not own"). Redisson and rlk write such a
-- lock as a hash of exactly one field, the holder id, whose value is the reentry count (a positive
-- integer), with a PEXPIRE in the same script: a live lock always has a TTL.
-- lock_shape(key) returns:
--   nil                   the key is missing, or is such a hash and has a TTL: a lock;
--   nil, 'a hash ...'     such a hash without a TTL whose field looks like a holder id (text, ':',
--                         text without ':'): a lock someone persisted, or data that looks like
--                         one (HSET visits user:1 3); acquire takes it as held, a destructive
--                         action refuses it unless the kind is named (what is found, second);
--   'a <what>'            anything else: what the key holds, for 'RLK_WRONGTYPE lock key holds ...'.
-- Reads HLEN (1 call), then the one field; never a whole application hash.

local function lock_shape(key)
  local kind = redis.call('type', key).ok
  if kind == 'none' then return nil end
  if kind ~= 'hash' then return 'a ' .. kind .. ', not a hash' end
  local n = redis.call('hlen', key)
  if n ~= 1 then
    return 'a hash of ' .. n .. ' fields, not a lock (one field: holder id -> count)'
  end
  local flat = redis.call('hgetall', key)
  local field, count = flat[1], flat[2]
  if #count > 16 or not count:find('^[1-9]%d*$') then
    return 'a hash whose one field is not a count, not a lock (holder id -> count)'
  end
  if redis.call('pttl', key) ~= -1 then return nil end
  if not field:find('^.+:[^:]+$') then
    return 'a hash without a TTL whose field is not a holder id, not a lock'
  end
  return nil, 'a hash without a TTL (a lock always has one)'
end
