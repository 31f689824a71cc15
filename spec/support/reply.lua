-- SPDX-License-Identifier: BSD-3-Clause
-- Canonical reply form shared by every backend (see spec/support/README.md).
--
--   integer -> number          bulk string -> string
--   nil bulk / nil array -> reply.NIL (one unique sentinel)
--   status -> {ok = "..."}     error -> {err = "..."}
--   array -> array table (nil elements are reply.NIL)
--
-- Also: a printer for failure messages and a comparison with options
-- (error prefixes, numeric tolerance, unordered arrays).

local reply = {}

-- One sentinel per process: busted reloads modules for every spec file
-- (it restores package.loaded), and a NIL from one load must equal a NIL
-- from another, so it lives in the Lua registry.
local REGISTRY_KEY = "rlk.spec.support.reply.NIL"
local registry = debug.getregistry()
local NIL = registry[REGISTRY_KEY]
if not NIL then
  NIL = setmetatable({}, {
    __tostring = function() return "NIL" end,
    __newindex = function() error("reply.NIL is read-only", 2) end,
  })
  registry[REGISTRY_KEY] = NIL
end
reply.NIL = NIL

function reply.is_nil(v)
  return v == NIL
end

function reply.is_status(v)
  return type(v) == "table" and v ~= NIL and type(v.ok) == "string"
end

function reply.is_error(v)
  return type(v) == "table" and v ~= NIL and type(v.err) == "string"
end

function reply.is_array(v)
  return type(v) == "table" and v ~= NIL and v.ok == nil and v.err == nil
end

local function describe(v, out)
  local t = type(v)
  if v == NIL then
    out[#out + 1] = "NIL"
  elseif t == "number" then
    out[#out + 1] = string.format("%.17g", v)
  elseif t == "string" then
    out[#out + 1] = string.format("%q", v)
  elseif t == "table" and type(v.err) == "string" then
    out[#out + 1] = "{err=" .. string.format("%q", v.err) .. "}"
  elseif t == "table" and type(v.ok) == "string" then
    out[#out + 1] = "{ok=" .. string.format("%q", v.ok) .. "}"
  elseif t == "table" then
    out[#out + 1] = "["
    for i = 1, #v do
      if i > 1 then out[#out + 1] = ", " end
      describe(v[i], out)
    end
    out[#out + 1] = "]"
  else
    out[#out + 1] = "<" .. tostring(v) .. ">"
  end
end

-- One-line text of a canonical reply, for failure messages.
function reply.describe(v)
  local out = {}
  describe(v, out)
  return table.concat(out)
end

-- The first word of an error message ("WRONGTYPE", "ERR", "RLK_BADLEASE").
function reply.error_code(msg)
  return (msg:match("^(%S+)")) or ""
end

local function starts_with(s, prefix)
  return s:sub(1, #prefix) == prefix
end

local function sort_key(v)
  return reply.describe(v)
end

-- A copy of an array reply with its elements in a fixed order.
function reply.sorted(v)
  if not reply.is_array(v) then return v end
  local copy = {}
  for i = 1, #v do copy[i] = v[i] end
  table.sort(copy, function(a, b) return sort_key(a) < sort_key(b) end)
  return copy
end

-- A copy of a flat [k1, v1, k2, v2 ...] array reply with its pairs sorted by key.
function reply.sorted_pairs(v)
  if not reply.is_array(v) then return v end
  local pairs_list = {}
  for i = 1, #v, 2 do pairs_list[#pairs_list + 1] = { v[i], v[i + 1] } end
  table.sort(pairs_list, function(a, b) return sort_key(a[1]) < sort_key(b[1]) end)
  local copy = {}
  for _, p in ipairs(pairs_list) do
    copy[#copy + 1] = p[1]
    copy[#copy + 1] = p[2]
  end
  return copy
end

-- Compares two canonical replies. opts:
--   err_prefix  errors match when both start with it (default: same first word)
--   tolerance   numbers match when they differ by at most this much (default 0)
-- Returns true, or false and a reason.
local function same(a, b, opts, path)
  if a == NIL or b == NIL then
    if a == b then return true end
    return false, path .. ": " .. reply.describe(a) .. " vs " .. reply.describe(b)
  end
  if type(a) ~= type(b) then
    return false, path .. ": " .. reply.describe(a) .. " vs " .. reply.describe(b)
  end
  if type(a) == "number" then
    local tol = opts.tolerance or 0
    if a == b or math.abs(a - b) <= tol then return true end
    return false, path .. ": " .. reply.describe(a) .. " vs " .. reply.describe(b)
  end
  if type(a) == "string" then
    if a == b then return true end
    return false, path .. ": " .. reply.describe(a) .. " vs " .. reply.describe(b)
  end
  if type(a) ~= "table" then
    return false, path .. ": not a canonical reply: " .. tostring(a)
  end
  if reply.is_error(a) or reply.is_error(b) then
    if not (reply.is_error(a) and reply.is_error(b)) then
      return false, path .. ": " .. reply.describe(a) .. " vs " .. reply.describe(b)
    end
    local prefix = opts.err_prefix
    local ok
    if prefix then
      ok = starts_with(a.err, prefix) and starts_with(b.err, prefix)
    else
      ok = reply.error_code(a.err) == reply.error_code(b.err)
    end
    if ok then return true end
    return false, path .. ": errors differ" .. (prefix and (" (prefix " .. string.format("%q", prefix) .. ")") or "")
      .. ": " .. reply.describe(a) .. " vs " .. reply.describe(b)
  end
  if reply.is_status(a) or reply.is_status(b) then
    if reply.is_status(a) and reply.is_status(b) and a.ok == b.ok then return true end
    return false, path .. ": " .. reply.describe(a) .. " vs " .. reply.describe(b)
  end
  if #a ~= #b then
    return false, path .. ": arrays of length " .. #a .. " and " .. #b .. ": "
      .. reply.describe(a) .. " vs " .. reply.describe(b)
  end
  for i = 1, #a do
    local ok, why = same(a[i], b[i], opts, path .. "[" .. i .. "]")
    if not ok then return false, why end
  end
  return true
end

function reply.same(a, b, opts)
  return same(a, b, opts or {}, "reply")
end

return reply
