-- SPDX-License-Identifier: BSD-3-Clause
-- check-helpers.lua: the include rules of docs/script-contract.md ("Shared helpers").
--
--   luajit tools/check-helpers.lua [SCRIPTS_DIR]        (or lua5.1; default: scripts)
--
-- Expands every script (tools/expand.lua) and fails when
--   - a script does not expand (missing, malformed, repeated or circular include);
--   - a helper file lib/<helper>.lua is not one `local function <helper>(...)` ... `end` (after its
--     leading comment and include lines), or no script includes it, directly or through a helper
--     (not checked while some script does not expand);
--   - the same `local function NAME` with the same body is written in two scripts (a copy: move it
--     to lib/NAME.lua and include it);
--   - one NAME means two different bodies (two scripts, or a script and a helper): a deliberate
--     difference gets a different name, so a name means one thing in every expanded script.
-- Prints one line per problem, "file:line: message", then "checked N scripts and M helpers, P problems".
-- Exit status: 0 clean, 1 any problem.

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local expand = require("expand")

local read_file, split_lines = expand.read_file, expand.split_lines

-- Top-level `local function NAME` ... `end` blocks of expanded text: { name, body, file, line }.
local function functions_of(text, origins)
  local found, lines = {}, split_lines(text)
  local i = 1
  while i <= #lines do
    local name = lines[i]:match("^local function ([%w_]+)%s*%(")
    if name then
      local j = i
      while j < #lines and lines[j] ~= "end" do j = j + 1 end
      local body = table.concat(lines, "\n", i, j)
      found[#found + 1] = { name = name, body = body, file = origins[i].file, line = origins[i].line }
      i = j
    end
    i = i + 1
  end
  return found
end

-- Problems in the shape of one helper file.
local function check_helper_file(path, name, problems)
  local src = read_file(path)
  if not src then
    problems[#problems + 1] = path .. ":1: cannot read"
    return
  end
  local lines, first = split_lines(src), nil
  for n, line in ipairs(lines) do
    if not (line == "" or line:sub(1, 2) == "--") then first = n; break end
  end
  if not first or first == 1 or lines[1]:sub(1, 3) == "---" then
    problems[#problems + 1] = path .. ":1: a helper starts with a comment saying what it does"
  end
  if not first then return end
  if not lines[first]:match("^local function " .. name .. "%s*%(") then
    problems[#problems + 1] = string.format(
      "%s:%d: the code must be 'local function %s(...)' (one helper per file, named as the file)", path, first, name)
    return
  end
  local close
  for n = first + 1, #lines do
    if lines[n] == "end" then close = n; break end
  end
  if not close then
    problems[#problems + 1] = string.format("%s:%d: the function must end with a line 'end'", path, #lines)
    return
  end
  for n = close + 1, #lines do
    if lines[n] ~= "" then
      problems[#problems + 1] = string.format("%s:%d: nothing but the one function may follow it", path, n)
      return
    end
  end
end

local function main(args)
  local root = (args[1] or "scripts"):gsub("/+$", "")
  local problems, used, defs, broken = {}, {}, {}, false
  local scripts, helpers = expand.scripts(root), expand.helpers(root)
  for _, h in ipairs(helpers) do
    check_helper_file(root .. "/" .. h .. ".lua", h:sub(5), problems)
  end
  for _, path in ipairs(scripts) do
    local text, origins = expand.file(path, root)
    if not text then
      problems[#problems + 1] = origins
      broken = true
    else
      for _, o in ipairs(origins) do used[o.file] = true end
      for _, f in ipairs(functions_of(text, origins)) do
        local key = f.file .. ":" .. f.line
        defs[f.name] = defs[f.name] or { list = {}, seen = {} }
        if not defs[f.name].seen[key] then
          defs[f.name].seen[key] = true
          table.insert(defs[f.name].list, f)
        end
      end
    end
  end
  for _, h in ipairs(helpers) do
    local path = root .. "/" .. h .. ".lua"
    if not used[path] and not broken then
      problems[#problems + 1] = path .. ":1: no script includes this helper (directly or through a helper)"
    end
  end
  local names = {}
  for name in pairs(defs) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local list = defs[name].list
    for i = 2, #list do
      local a, b = list[1], list[i]
      if a.body == b.body then
        problems[#problems + 1] = string.format(
          "%s:%d: local function %s is a copy of %s:%d: move it to %s/lib/%s.lua and include it",
          b.file, b.line, name, a.file, a.line, root, name)
      else
        problems[#problems + 1] = string.format(
          "%s:%d: local function %s differs from the one at %s:%d: give one of them another name",
          b.file, b.line, name, a.file, a.line)
      end
    end
  end
  for _, p in ipairs(problems) do print(p) end
  print(string.format("checked %d scripts and %d helpers, %d problems", #scripts, #helpers, #problems))
  return #problems == 0 and 0 or 1
end

os.exit(main(arg or {}))
