-- Lock-delay: after a renewal of a lock to lease_ms, its delay key (value: the delay in ms) keeps
-- at least PX lease_ms + that delay (GT: never cut, and a key without a TTL gets none). A delay
-- key of another type, or with no number, is left alone: the renewal is the lock's, and a refusal
-- would report a held lock lost.

local function renew_delay(delay, lease_ms)
  local d = redis.pcall('get', delay)
  if type(d) == 'string' and tonumber(d) then
    redis.call('pexpire', delay, tostring(lease_ms + tonumber(d)), 'gt')
  end
end
