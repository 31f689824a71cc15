-- Shared by the auditing tools (tools/trace, tools/modelcheck, tools/difffuzz): the operation
-- syntax, running one operation on a backend (spec/support/backend.lua) with every redis.call of a
-- script recorded (mock), the keyspace snapshot and its diff, and reply formatting.
--
--   local audit = dofile(root .. "/tools/audit.lua")
--
-- Operation syntax (one per line; `#` starts a comment at the start of a token):
--   <kind>/<op> KEY... [-- ARGV...]  EVAL of scripts/<kind>/<op>.lua (expanded). Without `--`, the
--                                    script header's KEYS count splits the words (a variadic script
--                                    needs the `--`).
--   advance <ms>                     move the mock's virtual clock (refused on a real server)
--   call <COMMAND> [ARG...]          one raw command
-- Words are separated by blanks; a word in double quotes may hold blanks, `#`, `\"` and `\\`;
-- `""` is the empty string.

local audit = {}

local function script_dir()
  local src = debug.getinfo(1, "S").source
  local dir = src:sub(1, 1) == "@" and src:sub(2):match("^(.*)/tools/audit%.lua$")
  if dir == "" then dir = "/" end
  return dir
end
audit.root = os.getenv("RLK_ROOT") or script_dir() or "."
package.path = audit.root .. "/spec/?.lua;" .. package.path

local backend = require("support.backend")
local reply = require("support.reply")
audit.backend, audit.reply, audit.NIL = backend, reply, reply.NIL

-- Tokenising ------------------------------------------------------------------------------------

-- The words of a line, or nil and an error.
function audit.tokenize(line)
  local words, i, n = {}, 1, #line
  while i <= n do
    local c = line:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif c == "#" then
      break
    elseif c == '"' then
      local buf, j, closed = {}, i + 1, false
      while j <= n do
        local d = line:sub(j, j)
        if d == "\\" and j < n then
          buf[#buf + 1] = line:sub(j + 1, j + 1)
          j = j + 2
        elseif d == '"' then
          closed = true
          break
        else
          buf[#buf + 1] = d
          j = j + 1
        end
      end
      if not closed then return nil, "unterminated quote" end
      words[#words + 1] = table.concat(buf)
      i = j + 1
    else
      local j = line:find("[%s]", i) or (n + 1)
      words[#words + 1] = line:sub(i, j - 1)
      i = j
    end
  end
  return words
end

-- A word as the tokenizer reads it back.
function audit.quote(s)
  s = tostring(s)
  if s ~= "" and not s:find('[%s"#\\]') and s ~= "--" then return s end
  return '"' .. s:gsub('[\\"]', "\\%0") .. '"'
end

-- Number of KEYS a script declares in its header; -1 when variadic; nil when no such script.
local numkeys_cache = {}
function audit.numkeys(name)
  if numkeys_cache[name] then return numkeys_cache[name] end
  local ok, path = pcall(backend.script_path, name)
  if not ok then return nil end
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("*a")
  f:close()
  local n = 0
  for idx in text:gmatch("\n%-%- KEYS%[([%d%.n]+)%]:") do
    if idx:find("%.%.") then n = -1 break end
    n = n + 1
  end
  numkeys_cache[name] = n
  return n
end

-- One line -> an operation table, or nil (blank/comment), or nil and an error.
--   { op = "script", name =, keys =, args = } | { op = "advance", ms = } | { op = "call", argv = }
function audit.parse(line)
  local w, err = audit.tokenize(line)
  if not w then return nil, err end
  if #w == 0 then return nil end
  local head = w[1]
  if head == "advance" then
    local ms = #w == 2 and w[2]:match("^%d+$") and tonumber(w[2])
    if not ms then return nil, "usage: advance <ms>" end
    return { op = "advance", ms = ms }
  elseif head == "call" then
    if #w < 2 then return nil, "usage: call <COMMAND> [ARG...]" end
    local argv = {}
    for i = 2, #w do argv[#argv + 1] = w[i] end
    return { op = "call", argv = argv }
  end
  if not head:find("/") then return nil, "unknown operation '" .. head .. "'" end
  local n = audit.numkeys(head)
  if not n then return nil, "no script '" .. head .. "'" end
  local keys, args, split = {}, {}, nil
  for i = 2, #w do
    if w[i] == "--" and not split then split = i end
  end
  if split then
    for i = 2, split - 1 do keys[#keys + 1] = w[i] end
    for i = split + 1, #w do args[#args + 1] = w[i] end
  else
    if n < 0 then return nil, head .. " takes a variadic number of KEYS: separate ARGV with --" end
    if #w - 1 < n then return nil, head .. " needs " .. n .. " KEYS" end
    for i = 2, n + 1 do keys[#keys + 1] = w[i] end
    for i = n + 2, #w do args[#args + 1] = w[i] end
  end
  return { op = "script", name = head, keys = keys, args = args }
end

-- An operation table back to its line (always with `--` for scripts).
function audit.format_op(o)
  local out = {}
  if o.op == "advance" then return "advance " .. string.format("%d", o.ms) end
  if o.op == "call" then
    out[1] = "call"
    for _, a in ipairs(o.argv) do out[#out + 1] = audit.quote(a) end
    return table.concat(out, " ")
  end
  out[1] = o.name
  for _, k in ipairs(o.keys) do out[#out + 1] = audit.quote(k) end
  out[#out + 1] = "--"
  for _, a in ipairs(o.args) do out[#out + 1] = audit.quote(a) end
  return table.concat(out, " ")
end

-- Replies ---------------------------------------------------------------------------------------

-- A canonical reply as one line: nil, (integer) 5, "text", +OK, (error) ..., [a, b].
function audit.show(v)
  if v == reply.NIL then return "nil" end
  local t = type(v)
  if t == "number" then return "(integer) " .. string.format("%.0f", v) end
  if t == "string" then return string.format("%q", v):gsub("\\\n", "\\n") end
  if t == "table" then
    if v.ok then return "+" .. v.ok end
    if v.err then return "(error) " .. v.err end
    local parts = {}
    for i, x in ipairs(v) do parts[i] = audit.show(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return tostring(v)
end

-- Keyspace --------------------------------------------------------------------------------------

local function cmd(r, ...)
  return r:command({ ... })
end

-- The value of a key as one line, by type (hash fields in the server's order, set members sorted).
local function value_of(r, key, kind)
  if kind == "string" then return audit.show(cmd(r, "GET", key)) end
  if kind == "hash" then
    local a, parts = cmd(r, "HGETALL", key), {}
    for i = 1, #a, 2 do parts[#parts + 1] = audit.quote(a[i]) .. "=" .. audit.quote(a[i + 1]) end
    return "{" .. table.concat(parts, " ") .. "}"
  end
  if kind == "list" then
    local a, parts = cmd(r, "LRANGE", key, "0", "-1"), {}
    for i, x in ipairs(a) do parts[i] = audit.quote(x) end
    return "[" .. table.concat(parts, " ") .. "]"
  end
  if kind == "set" then
    local a, parts = cmd(r, "SMEMBERS", key), {}
    for i, x in ipairs(a) do parts[i] = audit.quote(x) end
    table.sort(parts)
    return "(" .. table.concat(parts, " ") .. ")"
  end
  if kind == "zset" then
    local a, parts = cmd(r, "ZRANGE", key, "0", "-1", "WITHSCORES"), {}
    for i = 1, #a, 2 do parts[#parts + 1] = audit.quote(a[i]) .. ":" .. a[i + 1] end
    return "<" .. table.concat(parts, " ") .. ">"
  end
  return "?" .. tostring(kind)
end

-- { keys = sorted names, [name] = { type =, value = line, ttl = ms or -1 } } of the whole keyspace.
function audit.snapshot(r)
  local names = cmd(r, "KEYS", "*")
  table.sort(names)
  local s = { keys = names }
  for _, k in ipairs(names) do
    local kind = cmd(r, "TYPE", k)
    kind = type(kind) == "table" and kind.ok or tostring(kind)
    s[k] = { type = kind, value = value_of(r, k, kind), ttl = cmd(r, "PTTL", k) }
  end
  return s
end

local function describe(e)
  return e.type .. " " .. e.value .. (e.ttl >= 0 and (" ttl " .. string.format("%d", e.ttl)) or " no ttl")
end
audit.describe_entry = describe

-- Lines "+ key ...", "- key ...", "~ key old -> new" between two snapshots. ttl_same(a, b) decides
-- whether two TTLs count as unchanged (default: equal).
function audit.diff(a, b, ttl_same)
  ttl_same = ttl_same or function(x, y) return x == y end
  local out, seen = {}, {}
  for _, k in ipairs(b.keys) do
    seen[k] = true
    local old, new = a[k], b[k]
    if not old then
      out[#out + 1] = "+ " .. audit.quote(k) .. " " .. describe(new)
    elseif old.type ~= new.type or old.value ~= new.value or not ttl_same(old.ttl, new.ttl) then
      out[#out + 1] = "~ " .. audit.quote(k) .. " " .. describe(old) .. " -> " .. describe(new)
    end
  end
  for _, k in ipairs(a.keys) do
    if not seen[k] then out[#out + 1] = "- " .. audit.quote(k) .. " " .. describe(a[k]) end
  end
  return out
end

-- Running ---------------------------------------------------------------------------------------

-- Runs one operation on a backend; returns the reply (canonical form; for advance: the new clock)
-- or nil and an error (advance on a real server). With r.mock, calls (if given) collects
-- { argv =, reply =, raise = } for each redis.call/pcall the script made.
function audit.run(r, o, calls)
  if o.op == "advance" then
    if not r.virtual_time then
      return nil, "advance needs the mock's virtual clock: a real server's clock cannot be moved "
        .. "(expire a key with 'call PEXPIRE <key> 0' instead)"
    end
    return r:advance(o.ms)
  end
  local m = r.mock
  if m and calls then
    m.call_hook = function(argv, res, raise)
      local copy = {}
      for i, a in ipairs(argv) do copy[i] = a end
      calls[#calls + 1] = { argv = copy, reply = res, raise = raise }
    end
  end
  local res
  if o.op == "call" then
    res = r:command(o.argv)
  else
    local ok, src = pcall(backend.read_script, o.name)
    if not ok then
      if m then m.call_hook = nil end
      return nil, src
    end
    res = r:eval(o.src or src, o.keys, o.args)
  end
  if m then m.call_hook = nil end
  return res
end

return audit
