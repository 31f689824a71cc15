-- SPDX-License-Identifier: BSD-3-Clause
-- script_header.lua: parse and check the header of an rlk script (docs/script-contract.md).
-- Shared by tools/check-headers.lua and tools/gen-docs.lua; plain Lua 5.1 (LuaJIT or PUC).
--
--   local sh = require("script_header")
--   local header, problems = sh.parse(source)     -- header fields; problems in the header itself
--   local problems = sh.check(source, name)        -- every contract rule, code included
--   sh.numkeys(header)                             -- KEYS count, -1 when variadic
--
-- A problem is { line = <number>, message = <string> }.

local M = {}

-- Field order; the repeatable fields (KEYS, ARGV, return, error) may appear several times.
local ORDER = { "name", "version", "summary", "redisson", "time", "KEYS", "ARGV", "return", "error", "end" }
local RANK = {}
for i, f in ipairs(ORDER) do RANK[f] = i end
local SINGLE = { name = true, version = true, summary = true, redisson = true, time = true }
local SHAPES = { ["nil"] = true, integer = true, string = true, status = true, array = true }

local function problem(list, line, fmt, ...)
  list[#list + 1] = { line = line, message = string.format(fmt, ...) }
end

local function split_lines(source)
  local lines = {}
  for line in (source .. "\n"):gmatch("([^\n]*)\n") do
    lines[#lines + 1] = (line:gsub("\r$", ""))
  end
  if source:sub(-1) == "\n" then lines[#lines] = nil end
  return lines
end

-- One header line (without "-- ") -> field kind plus its parts, or nil and a reason.
local function classify(text)
  if text == "end" then return { field = "end" } end
  local kind, subscript, rest = text:match("^(%u+)%[([^%]]*)%]: (.*)$")
  if kind == "KEYS" or kind == "ARGV" then
    local index, tail = subscript:match("^(%d+)(.*)$")
    if not index or (tail ~= "" and tail ~= "..n") then
      return nil, "bad index in '" .. text .. "' (write " .. kind .. "[i] or " .. kind .. "[i..n])"
    end
    return { field = kind, index = tonumber(index), variadic = tail == "..n", value = rest }
  end
  local shape, meaning = text:match("^return ([^:]+): (.*)$")
  if shape then return { field = "return", shape = shape, value = meaning } end
  local code, cond = text:match("^error ([^:]+): (.*)$")
  if code then return { field = "error", code = code, value = cond } end
  local name, value = text:match("^([%w_]+): (.*)$")
  if name and SINGLE[name] then return { field = name, value = value } end
  if name then return nil, "unknown header field '" .. name .. "'" end
  if text:match("^end%s") or text:match("^%s*end%s*$") then
    return nil, "the header must end with a line that is exactly '-- end'"
  end
  return nil, "not a header field: '" .. text .. "'"
end

local function check_single(h, e, problems)
  if e.field == "version" then
    if not e.value:match("^[1-9]%d*$") then
      problem(problems, e.line, "version must be a positive integer, got '%s'", e.value)
    end
    h.version = tonumber(e.value)
  elseif e.field == "time" then
    if e.value ~= "none" and not e.value:match("^server%W+%w") then
      problem(problems, e.line, "time must be 'none' or 'server - <why>', got '%s'", e.value)
    end
    h.time = e.value
  else
    h[e.field] = e.value
  end
end

-- KEYS/ARGV: numbered from 1 without gaps, variadic tail last, "<short name> - meaning".
local function check_index(h, e, problems)
  local list = e.field == "KEYS" and h.keys or h.argv
  local expected = #list + 1
  if list.variadic then
    problem(problems, e.line, "%s[%d..n] must be the last %s line", e.field, list.variadic, e.field)
  elseif e.index ~= expected then
    problem(problems, e.line, "%s[%d] out of sequence: expected %s[%d]", e.field, e.index, e.field, expected)
  end
  local short, meaning = e.value:match("^([%w_]+) %- (%S.*)$")
  if not short then
    problem(problems, e.line, "%s[%d] must read '<short name> - <meaning>'", e.field, e.index)
  end
  local entry = { index = e.index, name = short or "", meaning = meaning or e.value, line = e.line,
                  variadic = e.variadic }
  if e.variadic then list.variadic = e.index else list[#list + 1] = entry end
  list.all[#list.all + 1] = entry
end

local function check_return(h, e, problems)
  if not (SHAPES[e.shape] or e.shape:match("^%-?%d+$")) then
    problem(problems, e.line, "unknown return shape '%s' (nil, integer, string, status, array or a literal integer)",
      e.shape)
  end
  if h.seen_return[e.shape] then problem(problems, e.line, "duplicate return '%s'", e.shape) end
  h.seen_return[e.shape] = true
  h.returns[#h.returns + 1] = { shape = e.shape, meaning = e.value, line = e.line }
end

local function check_error(h, e, problems)
  if not e.code:match("^RLK_[%u%d_]+$") then
    problem(problems, e.line, "error code '%s' must be RLK_<CODE>", e.code)
  end
  if h.error_line[e.code] then problem(problems, e.line, "duplicate error '%s'", e.code) end
  h.error_line[e.code] = e.line
  h.errors[#h.errors + 1] = { code = e.code, meaning = e.value, line = e.line }
end

local function new_header()
  return { keys = { all = {} }, argv = { all = {} }, returns = {}, errors = {},
           seen_return = {}, error_line = {}, field_line = {} }
end

local function add_entry(h, e, problems, last_rank)
  local rank = RANK[e.field]
  if rank < last_rank then
    problem(problems, e.line, "field '%s' out of order: it must come before '%s'", e.field, ORDER[last_rank])
  end
  if SINGLE[e.field] and h.field_line[e.field] then
    problem(problems, e.line, "duplicate field '%s'", e.field)
  end
  h.field_line[e.field] = h.field_line[e.field] or e.line
  if e.value and e.value:match("^%s*$") then
    problem(problems, e.line, "field '%s' is empty", e.field)
  end
  if SINGLE[e.field] then check_single(h, e, problems)
  elseif e.field == "KEYS" or e.field == "ARGV" then check_index(h, e, problems)
  elseif e.field == "return" then check_return(h, e, problems)
  elseif e.field == "error" then check_error(h, e, problems) end
  return math.max(rank, last_rank)
end

-- Parses the header block. Returns the header (fields, keys, argv, returns, errors, end_line)
-- and the list of problems found in the header alone.
function M.parse(source)
  local problems, h = {}, new_header()
  if source == "" then
    problem(problems, 1, "empty file: the header is missing")
    return h, problems
  end
  local lines, last_rank, stopped = split_lines(source), 0, false
  for n, line in ipairs(lines) do
    local text = line:match("^%-%- (.*)$")
    if not text then
      if n == 1 then
        problem(problems, 1, "the file must start with the header ('-- name: <kind>/<operation>')")
      else
        problem(problems, n, "header not closed: expected '-- end' before this line")
      end
      stopped = true
      break
    end
    local e, why = classify(text)
    if not e then
      problem(problems, n, "%s", why)
    else
      e.line = n
      last_rank = add_entry(h, e, problems, last_rank)
      if e.field == "end" then h.end_line = n; break end
    end
  end
  for _, f in ipairs(ORDER) do
    local required = SINGLE[f] or f == "return"
    if required and not h.field_line[f] and h.end_line then
      problem(problems, h.end_line, "missing field '%s'", f)
    end
  end
  if not h.end_line and not stopped and #lines > 0 then
    problem(problems, #lines, "header not closed: no line '-- end'")
  end
  return h, problems
end

-- ------------------------------------------------------------------ code scanning

-- Splits Lua source into tokens { kind = "string"|"name"|"number"|"op", text, line }, dropping
-- comments. Long strings and comments ([[ ]], [==[ ]==]) included.
local function long_bracket(src, i)
  local eq = src:match("^%[(=*)%[", i)
  if not eq then return nil end
  local close = "]" .. eq .. "]"
  local s, e = src:find(close, i + #eq + 2, true)
  local stop = e or #src
  return stop, src:sub(i + #eq + 2, (s or #src + 1) - 1)
end

local function count_nl(s)
  local _, n = s:gsub("\n", "")
  return n
end

local function short_string(src, i)
  local q, j = src:sub(i, i), i + 1
  while j <= #src do
    local c = src:sub(j, j)
    if c == "\\" then j = j + 2
    elseif c == q or c == "\n" then break
    else j = j + 1 end
  end
  return math.min(j, #src), src:sub(i + 1, j - 1)
end

function M.tokens(src, first_line)
  local toks, i, line = {}, 1, first_line or 1
  while i <= #src do
    local c = src:sub(i, i)
    local stop, text, kind
    if c:match("%s") then
      stop = src:find("[^%s]", i) or #src + 1
      line = line + count_nl(src:sub(i, stop - 1))
      i = stop
    else
      if src:sub(i, i + 1) == "--" then
        stop = long_bracket(src, i + 2)
        if not stop then stop = (src:find("\n", i, true) or #src + 1) - 1 end
      elseif c == "'" or c == '"' then
        kind = "string"; stop, text = short_string(src, i)
      elseif c == "[" and long_bracket(src, i) then
        kind = "string"; stop, text = long_bracket(src, i)
      elseif c:match("[%a_]") then
        kind = "name"; stop = src:find("[^%w_]", i) or #src + 1; stop = stop - 1
      elseif c:match("%d") then
        kind = "number"; stop = (src:find("[^%w%.]", i) or #src + 1) - 1
      else
        kind = "op"; stop = i
      end
      if kind then
        toks[#toks + 1] = { kind = kind, text = text or src:sub(i, stop), line = line }
      end
      line = line + count_nl(src:sub(i, stop))
      i = stop + 1
    end
  end
  return toks
end

-- What the code uses: literal KEYS/ARGV indexes, non-literal indexing or whole-table use,
-- RLK_ codes in string literals, and whether it asks Redis for TIME.
function M.scan(src, first_line)
  local use = { KEYS = { literal = {} }, ARGV = { literal = {} }, codes = {}, time_line = nil }
  local toks = M.tokens(src, first_line)
  for k, t in ipairs(toks) do
    local u = (t.text == "KEYS" or t.text == "ARGV") and use[t.text]
    if t.kind == "name" and u then
      local prev, nxt = toks[k - 1], toks[k + 1]
      if nxt and nxt.text == "[" then
        local idx, close = toks[k + 2], toks[k + 3]
        if idx and idx.kind == "number" and close and close.text == "]" and idx.text:match("^%d+$") then
          local n = tonumber(idx.text)
          u.literal[n] = u.literal[n] or t.line
        else
          u.dynamic = u.dynamic or t.line
        end
      elseif not (prev and prev.text == "#") then
        u.dynamic = u.dynamic or t.line
      end
    elseif t.kind == "string" then
      for code in t.text:gmatch("RLK_[%u%d_]*[%u%d]") do
        use.codes[code] = use.codes[code] or t.line
      end
      if t.text:lower() == "time" then use.time_line = use.time_line or t.line end
    end
  end
  return use
end

-- ------------------------------------------------------------------ header vs code

local function sorted_keys(t)
  local list = {}
  for k in pairs(t) do list[#list + 1] = k end
  table.sort(list)
  return list
end

local function declared(list, n)
  return n <= #list or (list.variadic ~= nil and n >= list.variadic)
end

local function check_indexes(kind, list, u, problems, header_line)
  for _, n in ipairs(sorted_keys(u.literal)) do
    if not declared(list, n) then
      problem(problems, u.literal[n], "code uses %s[%d] but the header does not declare it", kind, n)
    end
  end
  for _, entry in ipairs(list) do
    if not u.literal[entry.index] then
      problem(problems, entry.line, "header declares %s[%d] but the code never uses it", kind, entry.index)
    end
  end
  if list.variadic then
    local used = u.dynamic ~= nil
    for n in pairs(u.literal) do if n >= list.variadic then used = true end end
    if not used then
      problem(problems, header_line(list), "header declares %s[%d..n] but the code never uses it",
        kind, list.variadic)
    end
  elseif u.dynamic then
    problem(problems, u.dynamic, "code indexes %s with a non-constant but the header declares no %s[i..n]",
      kind, kind)
  end
end

local function check_codes(h, use, problems)
  for _, code in ipairs(sorted_keys(use.codes)) do
    if not h.error_line[code] then
      problem(problems, use.codes[code], "code replies %s but the header has no 'error %s' line", code, code)
    end
  end
  for _, e in ipairs(h.errors) do
    if not use.codes[e.code] then
      problem(problems, e.line, "header lists error %s but the code never replies it", e.code)
    end
  end
end

local function check_time(h, use, problems)
  local server = h.time and h.time:match("^server") ~= nil
  if use.time_line and not server then
    problem(problems, use.time_line, "code calls TIME but the header says 'time: %s'", h.time or "?")
  elseif server and not use.time_line then
    problem(problems, h.field_line.time, "header says 'time: server' but the code never calls TIME")
  end
end

local function tail_line(list)
  for _, e in ipairs(list.all) do if e.variadic then return e.line end end
  return 1
end

-- Every rule of the contract's Header section for one script. name: the path-derived name
-- (nil skips the name check). Returns the problems sorted by line.
function M.check(source, name)
  local h, problems = M.parse(source)
  if name and h.name and h.name ~= name then
    problem(problems, h.field_line.name, "name '%s' does not match the path-derived name '%s'", h.name, name)
  end
  if h.end_line then
    local lines = split_lines(source)
    local body = table.concat(lines, "\n", h.end_line + 1)
    local use = M.scan(body, h.end_line + 1)
    check_indexes("KEYS", h.keys, use.KEYS, problems, tail_line)
    check_indexes("ARGV", h.argv, use.ARGV, problems, tail_line)
    check_codes(h, use, problems)
    check_time(h, use, problems)
  end
  table.sort(problems, function(a, b)
    if a.line ~= b.line then return a.line < b.line end
    return a.message < b.message
  end)
  return problems
end

-- Number of KEYS the header declares; -1 when it ends in a variadic KEYS[i..n].
function M.numkeys(h)
  if h.keys.variadic then return -1 end
  return #h.keys
end

-- "scripts/reentrant/acquire.lua" -> "reentrant/acquire"; root: the scripts directory the path
-- was found under (optional; otherwise the part after the last "scripts/", else the last two parts).
function M.name_from_path(path, root)
  local p = path:gsub("%.lua$", "")
  if root then
    local r = root:gsub("/+$", "") .. "/"
    if p:sub(1, #r) == r then return p:sub(#r + 1) end
  end
  return p:match("scripts/(.+)$") or p:match("([^/]+/[^/]+)$") or p
end

return M
