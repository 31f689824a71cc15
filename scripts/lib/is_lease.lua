-- Whether s is a lease or wait time in ms: a decimal integer in 1..1000000000000 (no sign, no
-- leading zero, at most 13 digits; tonumber alone would accept 'inf', '0x10', '1e3', ' 5'). Only
-- a 13-digit s is converted to check the bound: tonumber costs as much as the pattern, and the
-- lock scripts' fast paths call this on every acquire and release.

local function is_lease(s)
  local n = #s
  return n <= 13 and s:find('^[1-9][0-9]*$') ~= nil and (n < 13 or tonumber(s) <= 1e12)
end
