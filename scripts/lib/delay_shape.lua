-- The shape of the reentrant lock's lock-delay key {lock}:rlk_delay (the rule of "Keys rlk does not
-- own", docs/cli.md): a string whose value is the delay in ms (an integer in 1..10^12, as
-- lib/is_lease reads it), always with a PX (acquire sets PX lease + delay; renewals and releases
-- only move it). Read before a script waits on the key, writes it or deletes it.
-- delay_shape(key) returns:
--   nil                  the key is missing;
--   nil, value, pttl     a delay key: its value (the delay) and its PTTL (>= 0);
--   'a <what>'           anything else: what the key holds, for 'RLK_WRONGTYPE delay key holds ...'.
-- Reads GET (its type error tells another type) and PTTL: 2 calls; TYPE only to name another type.

--- @include "lib/is_lease"

local function delay_shape(delay)
  local d = redis.pcall('get', delay)
  if type(d) == 'table' then
    return 'a ' .. redis.call('type', delay).ok .. ', not a string (the delay in ms)'
  end
  if not d then return nil end
  if not is_lease(d) then
    return 'a string that is not a delay (an integer of ms in 1..1000000000000)'
  end
  local pttl = redis.call('pttl', delay)
  if pttl < 0 then
    return 'a string without a TTL (a delay key always has one)'
  end
  return nil, d, pttl
end
