-- Read-write lock: whether s is a holder id: 1..1024 bytes, and not a field name the lock hash uses
-- for itself ('mode', or ending in ':write').

local function is_owner(s)
  return #s >= 1 and #s <= 1024 and s ~= 'mode' and s:sub(-6) ~= ':write'
end
