-- n as a decimal integer string (no exponent, no '.0'), exact up to 2^53, for commands and replies.

local function int(n)
  return string.format('%.0f', n)
end
