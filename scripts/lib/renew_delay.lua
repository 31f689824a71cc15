-- Lock-delay: after a renewal of lock (or a release that leaves a hold), its delay key (value: the
-- delay in ms) gets PX = the lock's PTTL + that delay, so that it outlives the hold by the delay
-- as acquire set it, and follows the lock's TTL, which a renewal or a release only raises (a
-- lock without a TTL leaves it as it is). A delay key of another type, or with no number, is
-- left alone: the renewal is the lock's, and a refusal would report a held lock lost.

local function renew_delay(delay, lock)
  local d = redis.pcall('get', delay)
  if type(d) == 'string' and tonumber(d) then
    local ttl = redis.call('pttl', lock)
    if ttl >= 0 then
      redis.call('pexpire', delay, tostring(ttl + tonumber(d)))
    end
  end
end
