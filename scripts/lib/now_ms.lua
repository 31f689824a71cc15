-- Milliseconds since the epoch by the server's clock (TIME): the script's header says 'time: server'.

local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
