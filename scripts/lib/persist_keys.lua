-- Removes the TTL of each key of keys (PERSIST, as RedissonExpirable.clearExpireAsync does for
-- every key of an object). Returns 1 when at least one key had a TTL, else 0.

local function persist_keys(keys)
  local cleared = 0
  for _, key in ipairs(keys) do
    if redis.call('persist', key) == 1 then
      cleared = 1
    end
  end
  return cleared
end
