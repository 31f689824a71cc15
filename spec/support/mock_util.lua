-- SPDX-License-Identifier: BSD-3-Clause
-- Shared pieces of the mock: Redis 7.0's error texts, argument parsing with
-- Redis's rules, reply formatting, glob matching and hash slots.

local int64 = require("support.int64")
local reply = require("support.reply")
local bit = require("support.bitop")

local util = {}

util.NIL = reply.NIL

-- Errors (fresh tables: callers may add fields) -----------------------------

function util.err(msg) return { err = msg } end
function util.ERR(msg) return { err = "ERR " .. msg } end

function util.wrongtype()
  return { err = "WRONGTYPE Operation against a key holding the wrong kind of value" }
end
function util.syntax() return { err = "ERR syntax error" } end
function util.not_integer() return { err = "ERR value is not an integer or out of range" } end
function util.not_float() return { err = "ERR value is not a valid float" } end
function util.overflow() return { err = "ERR increment or decrement would overflow" } end
function util.no_such_key() return { err = "ERR no such key" } end
function util.out_of_range() return { err = "ERR index out of range" } end
function util.bad_expire(cmd)
  return { err = "ERR invalid expire time in '" .. cmd .. "' command" }
end
function util.arity(cmd)
  return { err = "ERR wrong number of arguments for '" .. cmd .. "' command" }
end

function util.ok() return { ok = "OK" } end
function util.status(s) return { ok = s } end

-- Integers ------------------------------------------------------------------

-- Parses a 64-bit integer argument like Redis's string2ll. Returns the exact
-- decimal string and its (possibly rounded) number, or nil.
function util.parse_int(s)
  local exact = int64.parse(s)
  if not exact then return nil end
  return exact, tonumber(exact)
end

-- Number of an integer argument, or nil when Redis would reject it.
function util.int_arg(s)
  local _, n = util.parse_int(s)
  return n
end

-- Doubles -------------------------------------------------------------------

local function decimal_literal(rest)
  return rest:match("^%d+%.?%d*$") or rest:match("^%.%d+$")
    or rest:match("^%d+%.?%d*[eE][+-]?%d+$") or rest:match("^%.%d+[eE][+-]?%d+$")
end

-- strtod over the whole of `rest` (sign already removed). Returns the value
-- and whether strtod would have reported ERANGE (overflow, or underflow to 0).
local function strtod_all(rest)
  local low = rest:lower()
  if low == "inf" or low == "infinity" then return math.huge, false end
  if low == "nan" then return 0 / 0, false end
  if rest:match("^0[xX]%x+$") then return tonumber(rest), false end
  if not decimal_literal(rest) then return nil end
  local v = tonumber(rest)
  if v == nil then return nil end
  if v == math.huge then return v, true end
  local mantissa = rest:match("^[%d%.]*")
  if v == 0 and mantissa:match("[1-9]") then return v, true end
  return v, false
end

local function signed_strtod(s)
  local sign, rest = s:match("^([+-]?)(.*)$")
  local v, erange = strtod_all(rest)
  if v == nil then return nil end
  if sign == "-" then v = -v end
  return v, erange
end

-- A double argument as getDoubleFromObject reads it (ZADD scores, ZINCRBY):
-- no leading space, the whole string consumed, no NaN, no overflow, no
-- underflow to zero. Returns the number or nil.
function util.parse_double(s)
  if s == "" or s:match("^%s") then return nil end
  local v, erange = signed_strtod(s)
  if v == nil or erange or v ~= v then return nil end
  return v
end

-- A score range bound as zslParseRange reads it: optional '(' (exclusive),
-- then strtod (leading spaces allowed, "" is 0, overflow gives inf), no NaN.
-- Returns value, exclusive; or nil.
function util.parse_range_bound(s)
  local exclusive = false
  if s:sub(1, 1) == "(" then
    exclusive = true
    s = s:sub(2)
  end
  s = s:gsub("^%s+", "")
  if s == "" then return 0, exclusive end
  local v = signed_strtod(s)
  if v == nil or v ~= v then return nil end
  return v, exclusive
end

-- A double in a reply (addReplyDouble, RESP2): "inf", "-inf" or %.17g.
function util.format_double(d)
  if d == math.huge then return "inf" end
  if d == -math.huge then return "-inf" end
  return string.format("%.17g", d)
end

-- Glob matching (stringmatchlen: * ? [abc] [^a] [a-z] and \ escapes) -------

local function class_match(pat, p, c)
  -- pat:sub(p, p) == "["; returns matched, index just after ']'
  p = p + 1
  local negate = false
  if pat:sub(p, p) == "^" then
    negate = true
    p = p + 1
  end
  local matched = false
  while p <= #pat do
    local ch = pat:sub(p, p)
    if ch == "]" then break end
    if ch == "\\" and p < #pat then
      p = p + 1
      if pat:sub(p, p) == c then matched = true end
    elseif pat:sub(p + 1, p + 1) == "-" and p + 2 <= #pat then
      local lo, hi = pat:byte(p), pat:byte(p + 2)
      if lo > hi then lo, hi = hi, lo end
      local cb = c:byte()
      if cb >= lo and cb <= hi then matched = true end
      p = p + 2
    elseif ch == c then
      matched = true
    end
    p = p + 1
  end
  if negate then matched = not matched end
  return matched, p + 1
end

local function glob(pat, p, str, s)
  while p <= #pat do
    local ch = pat:sub(p, p)
    if ch == "*" then
      while pat:sub(p + 1, p + 1) == "*" do p = p + 1 end
      if p == #pat then return true end
      for i = s, #str + 1 do
        if glob(pat, p + 1, str, i) then return true end
      end
      return false
    end
    if s > #str then return false end
    local c = str:sub(s, s)
    if ch == "?" then
      p = p + 1
    elseif ch == "[" then
      local matched, np = class_match(pat, p, c)
      if not matched then return false end
      p = np
    else
      if ch == "\\" and p < #pat then
        p = p + 1
        ch = pat:sub(p, p)
      end
      if ch ~= c then return false end
      p = p + 1
    end
    s = s + 1
  end
  return s > #str
end

function util.glob_match(pattern, str)
  return glob(pattern, 1, str, 1)
end

-- Hash slots (CRC16/XMODEM of the {tag} or the whole key, mod 16384) -----

local CRC_TABLE = {}
for i = 0, 255 do
  local crc = bit.lshift(i, 8)
  for _ = 1, 8 do
    if bit.band(crc, 0x8000) ~= 0 then
      crc = bit.bxor(bit.lshift(crc, 1), 0x1021)
    else
      crc = bit.lshift(crc, 1)
    end
    crc = bit.band(crc, 0xFFFF)
  end
  CRC_TABLE[i] = crc
end

local function crc16(s)
  local crc = 0
  for i = 1, #s do
    local idx = bit.band(bit.bxor(bit.rshift(crc, 8), s:byte(i)), 0xFF)
    crc = bit.band(bit.bxor(bit.lshift(crc, 8), CRC_TABLE[idx]), 0xFFFF)
  end
  return crc
end
util.crc16 = crc16

function util.key_slot(key)
  local open = key:find("{", 1, true)
  if open then
    local close = key:find("}", open + 1, true)
    if close and close > open + 1 then
      key = key:sub(open + 1, close - 1)
    end
  end
  return crc16(key) % 16384
end

return util
