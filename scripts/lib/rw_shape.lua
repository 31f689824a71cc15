-- The shape of a read-write lock's hash (the rule of "Keys rlk does not own", docs/cli.md), read
-- before a destructive action: Redisson and rlk write field mode -> read or write, and per holder
-- '<owner>' -> its reads and '<owner>:write' -> its writes, each a positive count (a write lock has
-- at least one ':write' field, a read lock none), with a PEXPIRE: a live lock always has a TTL.
-- Returns as lib/lock_shape: nil (missing, or a read-write lock), nil and what was found (shaped as
-- one, without a TTL: refused unless the kind is named), or what the key holds.

local function rw_shape(lock)
  local kind = redis.call('type', lock).ok
  if kind == 'none' then return nil end
  if kind ~= 'hash' then return 'a ' .. kind .. ', not a hash' end
  local flat = redis.call('hgetall', lock)
  local mode, holders, writes = nil, 0, 0
  for i = 1, #flat, 2 do
    local field, count = flat[i], flat[i + 1]
    if field == 'mode' then
      mode = count
    elseif #count > 16 or not count:find('^[1-9]%d*$') then
      return 'a hash whose field ' .. (i + 1) / 2 .. ' is not a count, not a read-write lock'
    else
      holders = holders + 1
      if field:sub(-6) == ':write' then writes = writes + 1 end
    end
  end
  if not (mode == 'read' and writes == 0 or mode == 'write' and writes > 0) or holders == 0 then
    return 'a hash that is not a read-write lock (mode read or write and its holders\' counts)'
  end
  if redis.call('pttl', lock) == -1 then
    return nil, 'a hash without a TTL (a lock always has one)'
  end
  return nil
end
