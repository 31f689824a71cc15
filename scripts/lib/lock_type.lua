-- An exclusive lock's key before an acquire by owner (fenced lock, election): its type, 'none' or
-- 'hash', or nil and the RLK_WRONGTYPE reply. A hash that is not owner's and has no TTL (a live
-- lock always has one) must have a lock's shape (lib/lock_shape); a lock-shaped one is held.

--- @include "lib/lock_shape"

local function lock_type(lock, owner)
  local kind = redis.call('type', lock).ok
  if kind ~= 'none' and kind ~= 'hash' then
    return nil, redis.error_reply('RLK_WRONGTYPE lock key holds a ' .. kind .. ', not a hash')
  end
  if kind == 'hash' and redis.call('hexists', lock, owner) == 0 and redis.call('pttl', lock) == -1 then
    local found = lock_shape(lock)
    if found then
      return nil, redis.error_reply('RLK_WRONGTYPE lock key holds ' .. found)
    end
  end
  return kind
end
