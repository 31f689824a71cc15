-- Faster MultiLock: checks the values ARGV[first..#ARGV] of one call. Each is a field name of the
-- group hash: 1..1024 bytes without ':' (the holder's own fields are '<value>:<owner>:...', so a
-- value without ':' can never be one of them; Redisson's values are base64 hashes, which have no
-- ':'), and no value twice. Returns the list, or nil and the error reply.

local function fm_values(first)
  local values, seen = {}, {}
  if #ARGV < first then
    return nil, redis.error_reply('RLK_BADARG expected at least one value')
  end
  for i = first, #ARGV do
    local v = ARGV[i]
    if #v < 1 or #v > 1024 or v:find(':', 1, true) then
      return nil, redis.error_reply('RLK_BADVALUE value ' .. (i - first + 1)
        .. ' must be 1..1024 bytes without ":"')
    end
    if seen[v] then
      return nil, redis.error_reply('RLK_BADVALUE value ' .. (i - first + 1) .. ' is given twice')
    end
    seen[v] = true
    values[#values + 1] = v
  end
  return values
end
