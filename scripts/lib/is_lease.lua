-- Whether s is a lease or wait time in ms: a decimal integer in 1..1000000000000 (no sign, no
-- leading zero, at most 13 digits; tonumber alone would accept 'inf', '0x10', '1e3', ' 5').

local function is_lease(s)
  return #s <= 13 and s:find('^[1-9][0-9]*$') ~= nil and tonumber(s) <= 1e12
end
