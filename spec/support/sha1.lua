-- SPDX-License-Identifier: BSD-3-Clause
-- SHA-1 in Lua 5.1 (for redis.sha1hex, EVALSHA and script error texts in
-- the mock). Uses support.bitop: LuaJIT's bit, or the pure-Lua fallback.

local bit = require("support.bitop")

local band, bor, bxor, bnot = bit.band, bit.bor, bit.bxor, bit.bnot
local rol, tohex = bit.rol, bit.tohex

local TWO32 = 4294967296

local function add(...)
  local s = 0
  for i = 1, select("#", ...) do s = s + select(i, ...) end
  return bit.tobit(s % TWO32)
end

local function be32(s, i)
  local a, b, c, d = s:byte(i, i + 3)
  return bit.tobit(((a * 256 + b) * 256 + c) * 256 + d)
end

local function be64(n)
  local out = {}
  for i = 8, 1, -1 do
    out[i] = string.char(n % 256)
    n = math.floor(n / 256)
  end
  return table.concat(out)
end

local function pad(msg)
  local len = #msg
  local zeros = (55 - len) % 64
  return msg .. "\128" .. string.rep("\0", zeros) .. be64(len * 8)
end

local function block(h, s, off)
  local w = {}
  for t = 0, 15 do w[t] = be32(s, off + t * 4) end
  for t = 16, 79 do
    w[t] = rol(bxor(w[t - 3], w[t - 8], w[t - 14], w[t - 16]), 1)
  end
  local a, b, c, d, e = h[1], h[2], h[3], h[4], h[5]
  for t = 0, 79 do
    local f, k
    if t < 20 then
      f, k = bor(band(b, c), band(bnot(b), d)), 0x5A827999
    elseif t < 40 then
      f, k = bxor(b, c, d), 0x6ED9EBA1
    elseif t < 60 then
      f, k = bor(band(b, c), band(b, d), band(c, d)), 0x8F1BBCDC
    else
      f, k = bxor(b, c, d), 0xCA62C1D6
    end
    local temp = add(rol(a, 5), f, e, k, w[t])
    a, b, c, d, e = temp, a, rol(b, 30), c, d
  end
  h[1], h[2], h[3] = add(h[1], a), add(h[2], b), add(h[3], c)
  h[4], h[5] = add(h[4], d), add(h[5], e)
end

-- Lowercase hex SHA-1 of a string.
local function sha1hex(msg)
  local h = { bit.tobit(0x67452301), bit.tobit(0xEFCDAB89), bit.tobit(0x98BADCFE),
              bit.tobit(0x10325476), bit.tobit(0xC3D2E1F0) }
  local s = pad(msg)
  for off = 1, #s, 64 do block(h, s, off) end
  local out = {}
  for i = 1, 5 do out[i] = tohex(h[i], 8) end
  return table.concat(out)
end

return sha1hex
