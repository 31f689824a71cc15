-- Fence: whether token (an ARGV string) may act on the fence key's resource. Returns the token as a
-- number and the highest token the fence had accepted (0 when the key is missing), or nil and an
-- error reply: RLK_BADARG (not a decimal integer in 1..2^53-2), RLK_WRONGTYPE (the fence key is
-- not a string holding such an integer, or 0), RLK_FENCED <highest> (token below the highest).
-- An equal token is admitted: the same holder may write several times under one acquisition.
-- The script defines MAX_TOKEN (2^53 - 1).
-- luacheck: read globals MAX_TOKEN

local function fence_admit(fence, token)
  local t = #token <= 16 and token:find('^[1-9][0-9]*$') ~= nil and tonumber(token)
  if not t or t >= MAX_TOKEN then
    return nil, redis.error_reply('RLK_BADARG token must be a decimal integer in 1..9007199254740990')
  end
  local kind = redis.call('type', fence).ok
  local highest = 0
  if kind ~= 'none' then
    if kind ~= 'string' then
      return nil, redis.error_reply('RLK_WRONGTYPE fence key holds a ' .. kind .. ', not a string')
    end
    local s = redis.call('get', fence)
    highest = (s == '0' or (#s <= 16 and s:find('^[1-9][0-9]*$') ~= nil)) and tonumber(s)
    if not highest or highest >= MAX_TOKEN then
      return nil, redis.error_reply('RLK_WRONGTYPE fence key holds a string that is not a token')
    end
  end
  if t < highest then
    return nil, redis.error_reply('RLK_FENCED ' .. string.format('%.0f', highest))
  end
  return t, highest
end
