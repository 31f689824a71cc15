-- SPDX-License-Identifier: BSD-3-Clause
-- Exact signed 64-bit integers as decimal strings, for the mock.
--
-- Lua 5.1 numbers are doubles (exact only up to 2^53); Redis counts with
-- long long. The mock keeps integers as canonical decimal strings and does
-- the few operations it needs (parse, add, compare) digit by digit, so
-- overflow checks near +-2^63 answer exactly as Redis does.

local int64 = {}

local MAX_MAG = "9223372036854775807"
local MIN_MAG = "9223372036854775808"

int64.MAX = MAX_MAG
int64.MIN = "-" .. MIN_MAG

-- Parses like Redis's string2ll: an optional '-', no '+', no spaces, no
-- leading zeros, "-0" rejected, within [-2^63, 2^63-1]. Returns the string
-- (already canonical) or nil.
function int64.parse(s)
  if type(s) ~= "string" then return nil end
  if s == "0" then return s end
  local sign, digits = s:match("^(%-?)([1-9]%d*)$")
  if not digits or #digits > 19 then return nil end
  if #digits == 19 then
    local limit = (sign == "-") and MIN_MAG or MAX_MAG
    if digits > limit then return nil end
  end
  return s
end

local function split(s)
  if s:sub(1, 1) == "-" then return true, s:sub(2) end
  return false, s
end

-- Compares two non-negative magnitudes without leading zeros.
local function cmp_mag(x, y)
  if #x ~= #y then return (#x < #y) and -1 or 1 end
  if x == y then return 0 end
  return (x < y) and -1 or 1
end

local function strip(s)
  local r = s:gsub("^0+", "")
  if r == "" then return "0" end
  return r
end

local function add_mag(x, y)
  local out, carry = {}, 0
  local i, j = #x, #y
  while i > 0 or j > 0 or carry > 0 do
    local d = carry
    if i > 0 then d = d + x:byte(i) - 48 end
    if j > 0 then d = d + y:byte(j) - 48 end
    out[#out + 1] = string.char(48 + d % 10)
    carry = (d >= 10) and 1 or 0
    i, j = i - 1, j - 1
  end
  return strip(string.reverse(table.concat(out)))
end

-- x >= y
local function sub_mag(x, y)
  local out, borrow = {}, 0
  local i, j = #x, #y
  while i > 0 do
    local d = x:byte(i) - 48 - borrow
    if j > 0 then d = d - (y:byte(j) - 48) end
    if d < 0 then d, borrow = d + 10, 1 else borrow = 0 end
    out[#out + 1] = string.char(48 + d)
    i, j = i - 1, j - 1
  end
  return strip(string.reverse(table.concat(out)))
end

local function join(neg, mag)
  if mag == "0" then return "0" end
  return (neg and "-" or "") .. mag
end

-- Exact sum of two canonical integer strings (the result may lie outside
-- the 64-bit range; check it with int64.in_range).
function int64.add(a, b)
  local an, am = split(a)
  local bn, bm = split(b)
  if an == bn then return join(an, add_mag(am, bm)) end
  local c = cmp_mag(am, bm)
  if c == 0 then return "0" end
  if c > 0 then return join(an, sub_mag(am, bm)) end
  return join(bn, sub_mag(bm, am))
end

function int64.neg(a)
  if a == "0" then return a end
  local n, m = split(a)
  return join(not n, m)
end

function int64.sub(a, b)
  return int64.add(a, int64.neg(b))
end

-- -1, 0 or 1.
function int64.cmp(a, b)
  local an, am = split(a)
  local bn, bm = split(b)
  if an ~= bn then return an and -1 or 1 end
  local c = cmp_mag(am, bm)
  return an and -c or c
end

function int64.in_range(s)
  return int64.cmp(s, int64.MIN) >= 0 and int64.cmp(s, int64.MAX) <= 0
end

-- Exact product of a canonical integer string and a small positive factor.
function int64.mul_small(a, k)
  local neg, mag = split(a)
  local out, carry = {}, 0
  for i = #mag, 1, -1 do
    local d = (mag:byte(i) - 48) * k + carry
    out[#out + 1] = string.char(48 + d % 10)
    carry = math.floor(d / 10)
  end
  while carry > 0 do
    out[#out + 1] = string.char(48 + carry % 10)
    carry = math.floor(carry / 10)
  end
  return join(neg, strip(string.reverse(table.concat(out))))
end

-- Decimal text of an integral double (exact for any integral double).
function int64.from_number(n)
  if n ~= n or n == math.huge or n == -math.huge then return nil end
  local s = string.format("%.0f", n)
  if s == "-0" then return "0" end
  return s
end

return int64
