-- SPDX-License-Identifier: BSD-3-Clause
-- The `bit` library Redis gives scripts (LuaBitOp: 32-bit operations,
-- signed results). Under LuaJIT this is LuaJIT's own `bit` (the same API);
-- under PUC Lua 5.1 a pure-Lua implementation with the same results.

local ok, native = pcall(require, "bit")
if ok and type(native) == "table" and native.band then
  return native
end

local bit = {}

local TWO32 = 4294967296
local TWO31 = 2147483648

local function checknum(x, i, fname)
  local n = tonumber(x)
  if n == nil then
    error(string.format("bad argument #%d to '%s' (number expected, got %s)",
      i, fname, type(x) == "nil" and "no value" or type(x)), 3)
  end
  return n
end

-- Rounds to nearest, ties to even, as LuaBitOp's 2^52+2^51 trick does.
local function round_even(x)
  local r = math.floor(x + 0.5)
  if r - x == 0.5 and r % 2 ~= 0 then r = r - 1 end
  return r
end

local function u32(x)
  return round_even(x) % TWO32
end

local function signed(u)
  if u >= TWO31 then return u - TWO32 end
  return u
end

local AND, OR, XOR = {}, {}, {}
for a = 0, 15 do
  for b = 0, 15 do
    local ra, rb, m = a, b, 1
    local rand, ror, rxor = 0, 0, 0
    for _ = 1, 4 do
      local x, y = ra % 2, rb % 2
      if x == 1 and y == 1 then rand = rand + m end
      if x == 1 or y == 1 then ror = ror + m end
      if x ~= y then rxor = rxor + m end
      ra, rb, m = (ra - x) / 2, (rb - y) / 2, m * 2
    end
    AND[a * 16 + b], OR[a * 16 + b], XOR[a * 16 + b] = rand, ror, rxor
  end
end

local function combine(a, b, tbl)
  local r, m = 0, 1
  for _ = 1, 8 do
    local x, y = a % 16, b % 16
    r = r + tbl[x * 16 + y] * m
    a, b, m = (a - x) / 16, (b - y) / 16, m * 16
  end
  return r
end

local function folder(tbl, fname)
  return function(...)
    local n = select("#", ...)
    local acc = u32(checknum((...), 1, fname))
    for i = 2, n do
      acc = combine(acc, u32(checknum((select(i, ...)), i, fname)), tbl)
    end
    return signed(acc)
  end
end

bit.band = folder(AND, "band")
bit.bor = folder(OR, "bor")
bit.bxor = folder(XOR, "bxor")

function bit.tobit(x)
  return signed(u32(checknum(x, 1, "tobit")))
end

function bit.bnot(x)
  return signed(TWO32 - 1 - u32(checknum(x, 1, "bnot")))
end

local function shift_count(n, fname)
  return u32(checknum(n, 2, fname)) % 32
end

function bit.lshift(x, n)
  local u = u32(checknum(x, 1, "lshift"))
  return signed((u * 2 ^ shift_count(n, "lshift")) % TWO32)
end

function bit.rshift(x, n)
  local u = u32(checknum(x, 1, "rshift"))
  return signed(math.floor(u / 2 ^ shift_count(n, "rshift")))
end

function bit.arshift(x, n)
  local s = signed(u32(checknum(x, 1, "arshift")))
  return signed(math.floor(s / 2 ^ shift_count(n, "arshift")) % TWO32)
end

function bit.rol(x, n)
  local u = u32(checknum(x, 1, "rol"))
  local k = shift_count(n, "rol")
  local hi = math.floor(u / 2 ^ (32 - k))
  return signed((u * 2 ^ k) % TWO32 + hi)
end

function bit.ror(x, n)
  local u = u32(checknum(x, 1, "ror"))
  local k = shift_count(n, "ror")
  local lo = u % 2 ^ k
  return signed(math.floor(u / 2 ^ k) + lo * 2 ^ (32 - k))
end

function bit.bswap(x)
  local u = u32(checknum(x, 1, "bswap"))
  local b0 = u % 256
  local b1 = math.floor(u / 256) % 256
  local b2 = math.floor(u / 65536) % 256
  local b3 = math.floor(u / 16777216) % 256
  return signed(((b0 * 256 + b1) * 256 + b2) * 256 + b3)
end

function bit.tohex(x, n)
  local u = u32(checknum(x, 1, "tohex"))
  n = (n == nil) and 8 or round_even(checknum(n, 2, "tohex"))
  local upper = n < 0
  if upper then n = -n end
  if n > 8 then n = 8 end
  if n == 0 then return "" end
  local s = string.format(upper and "%08X" or "%08x", u)
  return s:sub(9 - n)
end

return bit
