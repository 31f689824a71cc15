-- Whether s is a number of permits to take or release: a decimal integer in 1..1000000000000.

local function is_permits(s)
  return #s <= 13 and s:find('^[1-9][0-9]*$') ~= nil and tonumber(s) <= 1e12
end
