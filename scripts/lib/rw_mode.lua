-- Read-write lock: 'none', 'read' or 'write'; nil and the reason when the key is not a read-write lock.

local function rw_mode(lock)
  local kind = redis.call('type', lock).ok
  if kind == 'none' then return 'none' end
  if kind ~= 'hash' then return nil, 'lock key holds a ' .. kind .. ', not a hash' end
  local mode = redis.call('hget', lock, 'mode')
  if mode == 'read' or mode == 'write' then return mode end
  return nil, 'lock hash has no mode field read or write'
end
