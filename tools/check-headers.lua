-- SPDX-License-Identifier: BSD-3-Clause
-- check-headers.lua: check every script's header against docs/script-contract.md.
--
--   luajit tools/check-headers.lua scripts            (or lua5.1; directories and/or files)
--
-- Each script is checked as Redis runs it: with its `--- @include` lines expanded
-- (tools/expand.lua), so KEYS, ARGV, RLK_ codes and TIME in the included helpers count. The
-- helpers themselves (scripts/lib/, no header) are skipped here; tools/check-helpers.lua checks them.
-- Prints one line per problem, "file:line: message" (a line that came from a helper names the
-- helper's file and line, and the script it was expanded into), then "checked N scripts, M problems".
-- Exit status: 0 clean, 1 any problem, 2 usage error.

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local sh = require("script_header")
local expand = require("expand")

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- The .lua files under dir, sorted, or nil when dir is not a directory.
local function lua_files(dir)
  local p = io.popen("test -d " .. shell_quote(dir) .. " && find " .. shell_quote(dir)
    .. " -type f -name '*.lua' | LC_ALL=C sort; echo \"$?\"")
  local out = p:read("*a")
  p:close()
  local files = {}
  for line in out:gmatch("[^\n]+") do files[#files + 1] = line end
  local status = table.remove(files)
  if status ~= "0" then return nil end
  return files
end

local read_file = expand.read_file

-- Returns the list of { path, name, root } to check and a list of problems for bad arguments.
-- root: the scripts directory includes are found under (nil: two levels above the file).
local function collect(args)
  local items, problems = {}, {}
  for _, a in ipairs(args) do
    local files = lua_files(a)
    if files then
      if #files == 0 then problems[#problems + 1] = a .. ":1: no scripts (*.lua) under this directory" end
      local root = a:gsub("/+$", "")
      for _, f in ipairs(files) do
        local name = sh.name_from_path(f, a)
        if not name:match("^lib/") then items[#items + 1] = { path = f, name = name, root = root } end
      end
    elseif not sh.name_from_path(a):match("^lib/") then
      items[#items + 1] = { path = a, name = sh.name_from_path(a) }
    end
  end
  return items, problems
end

-- "file:line: message" for a problem on line n of the expanded text of path.
local function locate(path, origins, n, message)
  local o = origins and origins[n]
  if o and o.file ~= path then
    return string.format("%s:%d: %s (expanded into %s)", o.file, o.line, message, path)
  end
  return string.format("%s:%d: %s", path, o and o.line or n, message)
end

-- The problems of one script, as printable lines.
local function check_item(item)
  local source, err = read_file(item.path)
  if not source then return { string.format("%s:1: cannot read: %s", item.path, tostring(err)) } end
  local text, origins = expand.source(source, item.path, item.root)
  if not text then return { origins } end
  local lines = {}
  for _, p in ipairs(sh.check(text, item.name)) do
    lines[#lines + 1] = locate(item.path, origins, p.line, p.message)
  end
  return lines
end

local function main(args)
  if #args == 0 or args[1] == "-h" or args[1] == "--help" then
    io.stderr:write("usage: check-headers.lua DIR|FILE...\n")
    return 2
  end
  local items, bad = collect(args)
  local count = #bad
  for _, line in ipairs(bad) do print(line) end
  for _, item in ipairs(items) do
    local problems = check_item(item)
    for _, line in ipairs(problems) do print(line) end
    count = count + #problems
  end
  print(string.format("checked %d scripts, %d problems", #items, count))
  return count == 0 and 0 or 1
end

os.exit(main(arg or {}))
