-- Sets a TTL of ms on each key of keys that exists (PEXPIRE, as RedissonExpirable.expireAsync
-- does for every key of an object). Returns 1 when at least one key got it, else 0 (no key
-- exists).

local function expire_keys(keys, ms)
  local set = 0
  for _, key in ipairs(keys) do
    if redis.call('pexpire', key, ms) == 1 then
      set = 1
    end
  end
  return set
end
