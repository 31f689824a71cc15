-- Whether s is a count to set: a decimal integer in 0..1000000000000 (0 allowed, no sign, no leading
-- zero).

local function is_count(s)
  return s == '0' or (#s <= 13 and s:find('^[1-9][0-9]*$') ~= nil and tonumber(s) <= 1e12)
end
