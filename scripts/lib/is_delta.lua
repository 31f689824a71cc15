-- Whether s is a change of a count: a decimal integer with optional '-', |s| <= 1000000000000, no
-- leading zero ('0' allowed, '-0' not).

local function is_delta(s)
  if s == '0' then return true end
  local digits = s:match('^%-?([1-9][0-9]*)$')
  return digits ~= nil and #digits <= 13 and tonumber(digits) <= 1e12
end
