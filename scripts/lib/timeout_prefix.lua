-- Read-write lock: Redisson's prefix of the per-read timeout keys, the hash tag of the lock's slot.

local function timeout_prefix(lock)
  if lock:find('{', 1, true) then return lock end
  return '{' .. lock .. '}'
end
