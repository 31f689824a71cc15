-- Faster MultiLock: nil when the group key is missing or a hash, else the RLK_WRONGTYPE reply.

local function fm_type(group)
  local kind = redis.call('type', group).ok
  if kind ~= 'none' and kind ~= 'hash' then
    return redis.error_reply('RLK_WRONGTYPE group key holds a ' .. kind .. ', not a hash')
  end
  return nil
end
