-- Whether s is a lease in ms: the decimal integer 1..1000000000000 written the one way tostring
-- writes it (no sign, no leading zero, no exponent, no spaces, no '.0', no hex). Cheaper than a
-- pattern on the hot path; the same verdicts as lib/is_lease.

local function lease_ok(s)
  local n = tonumber(s)
  return n ~= nil and n >= 1 and n <= 1e12 and n % 1 == 0 and tostring(n) == s
end
