-- SPDX-License-Identifier: BSD-3-Clause
-- sha1.lua: SHA-1 (FIPS 180-4) in plain Lua 5.1 arithmetic, no bit library needed, so the same
-- code runs under LuaJIT and PUC Lua 5.1. Words are numbers in [0, 2^32). Fast enough for files
-- of a few kilobytes (the scripts), not meant for bulk data.
--
--   local sha1 = require("sha1")
--   sha1.hex("abc")  --> "a9993e364706816aba3e25717850c26c9cd0d89d"

local M = {}

local TWO32 = 4294967296

-- xor of two bytes, from a 256x256 table built once from single bits.
local XOR8 = {}
for a = 0, 255 do
  local row = {}
  for b = 0, 255 do
    local r, p, x, y = 0, 1, a, b
    for _ = 1, 8 do
      if x % 2 ~= y % 2 then r = r + p end
      x, y, p = math.floor(x / 2), math.floor(y / 2), p * 2
    end
    row[b] = r
  end
  XOR8[a] = row
end

local function bxor(a, b)
  local r, p = 0, 1
  for _ = 1, 4 do
    local x, y = a % 256, b % 256
    r = r + XOR8[x][y] * p
    a, b, p = (a - x) / 256, (b - y) / 256, p * 256
  end
  return r
end

-- a + b = (a xor b) + 2 (a and b)
local function band(a, b)
  return (a + b - bxor(a, b)) / 2
end

local function add(...)
  local s = 0
  for i = 1, select("#", ...) do s = s + select(i, ...) end
  return s % TWO32
end

local function rotl(x, n)
  local hi = 2 ^ n
  local top = math.floor(x / 2 ^ (32 - n))
  return (x * hi) % TWO32 + top
end

local function be32(s, i)
  local a, b, c, d = s:byte(i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local function pad(msg)
  local bits = #msg * 8
  local zeros = (55 - #msg) % 64
  local len = {}
  for i = 8, 1, -1 do
    len[i] = string.char(bits % 256)
    bits = math.floor(bits / 256)
  end
  return msg .. "\128" .. string.rep("\0", zeros) .. table.concat(len)
end

local function round_f(t, b, c, d)
  if t < 20 then return bxor(d, band(b, bxor(c, d))), 0x5A827999 end
  if t < 40 then return bxor(bxor(b, c), d), 0x6ED9EBA1 end
  if t < 60 then return band(b, c) + band(d, bxor(b, c)), 0x8F1BBCDC end
  return bxor(bxor(b, c), d), 0xCA62C1D6
end

local function block(h, s, offset)
  local w = {}
  for t = 0, 15 do w[t] = be32(s, offset + 4 * t) end
  for t = 16, 79 do
    w[t] = rotl(bxor(bxor(w[t - 3], w[t - 8]), bxor(w[t - 14], w[t - 16])), 1)
  end
  local a, b, c, d, e = h[1], h[2], h[3], h[4], h[5]
  for t = 0, 79 do
    local f, k = round_f(t, b, c, d)
    a, b, c, d, e = add(rotl(a, 5), f, e, k, w[t]), a, rotl(b, 30), c, d
  end
  h[1], h[2], h[3], h[4], h[5] = add(h[1], a), add(h[2], b), add(h[3], c), add(h[4], d), add(h[5], e)
end

-- Returns the SHA-1 of the string msg as 40 lowercase hex digits.
function M.hex(msg)
  local s = pad(msg)
  local h = { 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0 }
  for offset = 1, #s, 64 do block(h, s, offset) end
  return string.format("%08x%08x%08x%08x%08x", h[1], h[2], h[3], h[4], h[5])
end

return M
