-- check-headers.lua: check every script's header against docs/script-contract.md.
--
--   luajit tools/check-headers.lua scripts            (or lua5.1; directories and/or files)
--
-- Prints one line per problem, "file:line: message", then "checked N scripts, M problems".
-- Exit status: 0 clean, 1 any problem, 2 usage error.

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local sh = require("script_header")

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

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("*a")
  f:close()
  return s
end

-- Returns the list of { path, name } to check and a list of problems for bad arguments.
local function collect(args)
  local items, problems = {}, {}
  for _, a in ipairs(args) do
    local files = lua_files(a)
    if files then
      if #files == 0 then problems[#problems + 1] = a .. ":1: no scripts (*.lua) under this directory" end
      for _, f in ipairs(files) do items[#items + 1] = { path = f, name = sh.name_from_path(f, a) } end
    else
      items[#items + 1] = { path = a, name = sh.name_from_path(a) }
    end
  end
  return items, problems
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
    local source, err = read_file(item.path)
    local problems = source and sh.check(source, item.name)
      or { { line = 1, message = "cannot read: " .. tostring(err) } }
    for _, p in ipairs(problems) do
      print(string.format("%s:%d: %s", item.path, p.line, p.message))
    end
    count = count + #problems
  end
  print(string.format("checked %d scripts, %d problems", #items, count))
  return count == 0 and 0 or 1
end

os.exit(main(arg or {}))
