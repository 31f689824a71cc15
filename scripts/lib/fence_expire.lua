-- Fence: the fenced EXPIRE and PEXPIRE (fence/expire, fence/pexpire), on their KEYS (fence, data)
-- and ARGV (token, ttl, an optional condition NX XX GT LT). command: 'expire' or 'pexpire', the
-- data command, which reads ttl in its own unit. Checks the 2 keys and 2 or 3 arguments, the keys
-- (lib/fence_keys), ttl (1..1000000000000, lib/is_lease: a non-positive TTL would delete) and the
-- condition (RLK_BADARG), then the token (lib/fence_admit), and returns the data command's reply
-- through lib/fence_done (the token recorded when the command did not fail), or the error reply.

--- @include "lib/is_lease"
--- @include "lib/fence_keys"
--- @include "lib/fence_admit"
--- @include "lib/fence_done"

local function fence_expire(command)
  if #KEYS ~= 2 or #ARGV < 2 or #ARGV > 3 then
    return redis.error_reply('RLK_BADARG expected 2 keys and 2 or 3 arguments')
  end
  local fence, data = KEYS[1], KEYS[2]
  local bad = fence_keys(fence, data)
  if bad then return bad end
  local ttl, cond = ARGV[2], ARGV[3]
  if not is_lease(ttl) then
    return redis.error_reply('RLK_BADARG ttl must be an integer in 1..1000000000000')
  end
  if cond then
    cond = cond:lower()
    if cond ~= 'nx' and cond ~= 'xx' and cond ~= 'gt' and cond ~= 'lt' then
      return redis.error_reply('RLK_BADARG the condition must be NX, XX, GT or LT')
    end
  end
  local token, highest = fence_admit(fence, ARGV[1])
  if not token then return highest end
  local reply
  if cond then reply = redis.pcall(command, data, ttl, cond) else reply = redis.pcall(command, data, ttl) end
  return fence_done(fence, token, highest, reply)
end
