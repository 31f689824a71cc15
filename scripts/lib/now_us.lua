-- Server time in microseconds since the epoch (TIME).

local function now_us()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
