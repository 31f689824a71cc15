-- SPDX-License-Identifier: BSD-3-Clause
-- expand.lua: expand the include lines of rlk scripts (docs/script-contract.md, "Includes").
-- Plain Lua 5.1: runs under LuaJIT and PUC Lua 5.1, as a module and as a command.
--
--   luajit tools/expand.lua scripts/fair/acquire.lua     print the expanded script (what Redis runs)
--   luajit tools/expand.lua --out DIR scripts            write DIR/<kind>/<op>.lua for every script,
--                                                        each file only when its bytes change; remove
--                                                        other *.lua under DIR
--   local expand = require("expand")                     (package.path: tools/?.lua)
--   local text, origins = expand.file(path [, root])     nil, "file:line: message" on a bad include
--   local text, origins = expand.source(src, path [, root])
--   expand.scripts(root)                                 sorted paths of the scripts (not lib/) under root
--   expand.helpers(root)                                 sorted names ("lib/x") of the helpers under root
--   expand.read_file(path), expand.split_lines(text)     the file helpers the tools share
--
-- An include is a line that is exactly `--- @include "lib/<helper>"`. It is replaced by the code of
-- <root>/lib/<helper>.lua: the file minus its leading comment block, its include lines and blank
-- lines, without the final newline. A helper's own includes are emitted before it, each followed by
-- a blank line, and each helper at most once per expansion (a helper another helper already pulled
-- in is not emitted again). Errors, each naming the file and line of the include: no such helper, a
-- malformed include line, a helper included twice by the script (or twice by one helper), a
-- circular include, an include after a helper's code has begun.
-- root: the scripts directory; default: two levels above path (scripts/<kind>/<op>.lua).
-- origins[i] = { file = <path>, line = <n> }: where line i of the expanded text comes from.

local M = {}

M.PATTERN = '^%-%-%- @include "(.*)"$'
local NAME = "^lib/[%w_]+$"

-- The bytes of the file at path, or nil and the reason.
function M.read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("*a")
  f:close()
  return s
end
local read_file = M.read_file

-- The lines of source, without their "\n" (a final newline ends the last line, it opens none).
function M.split_lines(source)
  local lines = {}
  for line in (source .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  if source:sub(-1) == "\n" then lines[#lines] = nil end
  return lines
end
local split_lines = M.split_lines

local function default_root(path)
  return path:match("^(.*)/[^/]+/[^/]+$") or (path:match("^[^/]+/[^/]+$") and ".") or ".."
end

-- The include named on line (nil when the line is no include), or false and why it is malformed.
local function include_of(line)
  if line:sub(1, 12) ~= "--- @include" then return nil end
  local name = line:match(M.PATTERN)
  if not name then return false, 'malformed include: write exactly --- @include "lib/<helper>"' end
  if not name:match(NAME) then
    return false, "include '" .. name .. "' must name a helper lib/<helper> (letters, digits, _)"
  end
  return name
end

local function fail(path, line, fmt, ...)
  error({ message = string.format("%s:%d: " .. fmt, path, line, ...) }, 0)
end

-- A helper file, split: deps = { {name, line} }, code = { {text, line} }.
local function load_helper(st, name, from, at)
  local cached = st.helpers[name]
  if cached then return cached end
  local path = st.root .. "/" .. name .. ".lua"
  local src = read_file(path)
  if not src then fail(from, at, "no such helper '%s' (%s)", name, path) end
  local h = { name = name, path = path, deps = {}, code = {} }
  local seen = {}
  for n, line in ipairs(split_lines(src)) do
    local inc, why = include_of(line)
    if inc == false then fail(path, n, "%s", why) end
    if inc then
      if #h.code > 0 then fail(path, n, "include of '%s' after the helper's code began", inc) end
      if seen[inc] then fail(path, n, "repeated include of '%s' (first on line %d)", inc, seen[inc]) end
      seen[inc] = n
      h.deps[#h.deps + 1] = { name = inc, line = n }
    elseif #h.code > 0 or not (line == "" or line:sub(1, 2) == "--") then
      h.code[#h.code + 1] = { text = line, line = n }
    end
  end
  while #h.code > 0 and h.code[#h.code].text == "" do h.code[#h.code] = nil end
  if #h.code == 0 then fail(path, 1, "helper has no code") end
  st.helpers[name] = h
  return h
end

-- Appends helper name (its dependencies first) to st.out unless it is there already.
local function emit(st, name, from, at, chain)
  for i, c in ipairs(chain) do
    if c == name then
      local cycle = {}
      for j = i, #chain do cycle[#cycle + 1] = chain[j] end
      cycle[#cycle + 1] = name
      fail(from, at, "circular include: %s", table.concat(cycle, " -> "))
    end
  end
  if st.emitted[name] then return end
  local h = load_helper(st, name, from, at)
  chain[#chain + 1] = name
  for _, d in ipairs(h.deps) do
    -- a dependency emitted earlier in this expansion is satisfied; emit() still finds a cycle
    local before = #st.out
    emit(st, d.name, h.path, d.line, chain)
    if #st.out > before then
      st.out[#st.out + 1] = ""
      st.origins[#st.origins + 1] = { file = h.path, line = d.line }
    end
  end
  chain[#chain] = nil
  for _, c in ipairs(h.code) do
    st.out[#st.out + 1] = c.text
    st.origins[#st.origins + 1] = { file = h.path, line = c.line }
  end
  st.emitted[name] = { file = from, line = at }
end

-- Expands the script source read from path. Returns text and origins, or nil and the error.
function M.source(src, path, root)
  local st = { root = root or default_root(path), helpers = {}, emitted = {}, out = {}, origins = {} }
  local ok, err = pcall(function()
    for n, line in ipairs(split_lines(src)) do
      local inc, why = include_of(line)
      if inc == false then fail(path, n, "%s", why) end
      if inc then
        local first = st.emitted[inc]
        if first then
          fail(path, n, "repeated include of '%s' (already included at %s:%d)", inc, first.file, first.line)
        end
        emit(st, inc, path, n, {})
      else
        st.out[#st.out + 1] = line
        st.origins[#st.origins + 1] = { file = path, line = n }
      end
    end
  end)
  if not ok then
    if type(err) == "table" then return nil, err.message end
    error(err, 0)
  end
  local text = table.concat(st.out, "\n")
  if src:sub(-1) == "\n" then text = text .. "\n" end
  return text, st.origins
end

function M.file(path, root)
  local src, err = read_file(path)
  if not src then return nil, path .. ":1: cannot read: " .. tostring(err) end
  return M.source(src, path, root)
end

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local function find(dir, args)
  local p = io.popen("find " .. shell_quote(dir) .. " " .. args .. " 2>/dev/null | LC_ALL=C sort")
  local list = {}
  for l in p:read("*a"):gmatch("[^\n]+") do list[#list + 1] = l end
  p:close()
  return list
end

-- Sorted paths of root/<kind>/<op>.lua, lib/ excluded.
function M.scripts(root)
  local list = {}
  for _, p in ipairs(find(root, "-mindepth 2 -maxdepth 2 -type f -name '*.lua'")) do
    if not p:sub(#root + 2):match("^lib/") then list[#list + 1] = p end
  end
  return list
end

-- Sorted names "lib/<helper>" of root/lib/*.lua.
function M.helpers(root)
  local list = {}
  for _, p in ipairs(find(root .. "/lib", "-maxdepth 1 -type f -name '*.lua'")) do
    list[#list + 1] = "lib/" .. p:match("([^/]+)%.lua$")
  end
  return list
end

-- ------------------------------------------------------------------ command line

local function write_if_changed(path, text)
  if read_file(path) == text then return end
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function write_all(out, root)
  local bad, wanted = 0, {}
  for _, path in ipairs(M.scripts(root)) do
    local text, err = M.file(path, root)
    if text then
      local rel = path:sub(#root + 2)
      wanted[rel] = true
      os.execute("mkdir -p " .. shell_quote(out .. "/" .. rel:match("^(.*)/")))
      write_if_changed(out .. "/" .. rel, text)
    else
      io.stderr:write(err, "\n")
      bad = bad + 1
    end
  end
  if bad > 0 then return 1 end
  for _, p in ipairs(find(out, "-type f -name '*.lua'")) do
    if not wanted[p:sub(#out + 2)] then os.remove(p) end
  end
  return 0
end

local function main(args)
  if args[1] == "--out" and args[2] and args[3] and not args[4] then
    return write_all((args[2]:gsub("/+$", "")), (args[3]:gsub("/+$", "")))
  end
  if #args ~= 1 or args[1]:sub(1, 1) == "-" then
    io.stderr:write("usage: expand.lua FILE | expand.lua --out DIR SCRIPTS_DIR\n")
    return 2
  end
  local text, err = M.file(args[1])
  if not text then
    io.stderr:write(err, "\n")
    return 1
  end
  io.write(text)
  return 0
end

if arg and arg[0] and arg[0]:match("expand%.lua$") and (...) ~= "expand" then
  os.exit(main(arg))
end

return M
