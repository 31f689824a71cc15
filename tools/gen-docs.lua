-- SPDX-License-Identifier: BSD-3-Clause
-- gen-docs.lua: generate docs/reference.md from the script headers.
--
--   luajit tools/gen-docs.lua            write docs/reference.md
--   luajit tools/gen-docs.lua --check    exit 1 when docs/reference.md differs from what would be written
--   options: --scripts DIR (default <repo>/scripts), --out FILE (default <repo>/docs/reference.md)
--
-- <repo> is the directory above this file. Scripts are read expanded (tools/expand.lua): the SHA-1
-- is of the text Redis runs. A script whose header has problems, or whose includes do not expand,
-- stops the run (exit 1, problems printed as check-headers.lua prints them). Exit 2: usage error.

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local sh = require("script_header")
local sha1 = require("sha1")
local expand = require("expand")
local root = here == "tools" and "." or here:match("^(.*)/tools$") or here .. "/.."

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local read_file = expand.read_file

local function lua_files(dir)
  local p = io.popen("find " .. shell_quote(dir) .. " -type f -name '*.lua' 2>/dev/null | LC_ALL=C sort")
  local files = {}
  for line in p:read("*a"):gmatch("[^\n]+") do files[#files + 1] = line end
  p:close()
  return files
end

-- Markdown text safe inside a table cell or a paragraph: no HTML tags, no column breaks.
local function md(s)
  return (s:gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;"):gsub("|", "\\|"))
end

local function anchor(name)
  return (name:lower():gsub("[^%w_%- ]", ""):gsub(" ", "-"))
end

local function index_label(kind, e)
  if e.variadic then return string.format("%s[%d..n]", kind, e.index) end
  return string.format("%s[%d]", kind, e.index)
end

local function args_table(out, kind, list)
  if #list.all == 0 then
    out[#out + 1] = string.format("%s: none.\n", kind)
    return
  end
  out[#out + 1] = string.format("| %s | name | meaning |\n| --- | --- | --- |", kind)
  for _, e in ipairs(list.all) do
    out[#out + 1] = string.format("| `%s` | %s | %s |", index_label(kind, e), md(e.name), md(e.meaning))
  end
  out[#out + 1] = ""
end

local function section(out, s)
  local h = s.header
  out[#out + 1] = "## " .. h.name .. "\n"
  out[#out + 1] = md(h.summary) .. "\n"
  out[#out + 1] = string.format("- Source: [scripts/%s.lua](../scripts/%s.lua)", h.name, h.name)
  out[#out + 1] = string.format("- Version: %d", h.version)
  out[#out + 1] = string.format("- SHA-1: `%s`", s.sha1)
  out[#out + 1] = "- Redisson equivalent: " .. md(h.redisson)
  out[#out + 1] = "- Clock: " .. md(h.time)
  out[#out + 1] = ""
  args_table(out, "KEYS", h.keys)
  args_table(out, "ARGV", h.argv)
  out[#out + 1] = "| returns | meaning |\n| --- | --- |"
  for _, r in ipairs(h.returns) do
    out[#out + 1] = string.format("| `%s` | %s |", r.shape, md(r.meaning))
  end
  out[#out + 1] = ""
  if #h.errors > 0 then
    out[#out + 1] = "| error | when |\n| --- | --- |"
    for _, e in ipairs(h.errors) do
      out[#out + 1] = string.format("| `%s` | %s |", e.code, md(e.meaning))
    end
    out[#out + 1] = ""
  end
end

-- The whole reference for the list of { header, sha1 }, sorted by name.
local function render(scripts)
  local out = {
    "# Script reference\n",
    "Generated from the script headers by `tools/gen-docs.lua`; do not edit by hand. After changing",
    "a script run `luajit tools/gen-docs.lua`; ctest's `docs_reference_fresh` fails while this file is",
    "stale. The header format and the error vocabulary are in [script-contract.md](script-contract.md).",
    "SHA-1 is of the expanded script's exact bytes (its `--- @include` lines replaced by the helpers,",
    "as the build embeds and bundles it: what `SCRIPT LOAD` returns). Keys: the number of KEYS, or",
    "`n` when variadic.\n",
    "| script | version | keys | SHA-1 |\n| --- | --- | --- | --- |",
  }
  for _, s in ipairs(scripts) do
    local nk = sh.numkeys(s.header)
    out[#out + 1] = string.format("| [%s](#%s) | %d | %s | `%s` |", s.header.name, anchor(s.header.name),
      s.header.version, nk < 0 and "n" or tostring(nk), s.sha1)
  end
  out[#out + 1] = ""
  for _, s in ipairs(scripts) do section(out, s) end
  return (table.concat(out, "\n"):gsub("\n+$", "\n"))
end

-- Loads and checks every script; returns the list or nil after printing the problems.
local function load_scripts(dir)
  local scripts, bad = {}, 0
  for _, path in ipairs(lua_files(dir)) do
    local name = sh.name_from_path(path, dir)
    if not name:match("^lib/") then
      local source, err = expand.source(assert(read_file(path)), path, (dir:gsub("/+$", "")))
      if source then
        local problems = sh.check(source, name)
        for _, p in ipairs(problems) do print(string.format("%s:%d: %s", path, p.line, p.message)) end
        bad = bad + #problems
        scripts[#scripts + 1] = { header = (sh.parse(source)), sha1 = sha1.hex(source) }
      else
        print(err)
        bad = bad + 1
      end
    end
  end
  if #scripts == 0 then print(dir .. ": no scripts found"); return nil end
  if bad > 0 then return nil end
  table.sort(scripts, function(a, b) return a.header.name < b.header.name end)
  return scripts
end

local function parse_args(args)
  local opts = { scripts = root .. "/scripts", out = root .. "/docs/reference.md" }
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "--check" then opts.check = true
    elseif (a == "--scripts" or a == "--out") and args[i + 1] then opts[a:sub(3)] = args[i + 1]; i = i + 1
    else return nil, "unknown argument '" .. a .. "'" end
    i = i + 1
  end
  return opts
end

local function main(args)
  local opts, err = parse_args(args)
  if not opts then
    io.stderr:write("gen-docs.lua: ", err, "\nusage: gen-docs.lua [--check] [--scripts DIR] [--out FILE]\n")
    return 2
  end
  local scripts = load_scripts(opts.scripts)
  if not scripts then return 1 end
  local text = render(scripts)
  if opts.check then
    if read_file(opts.out) == text then return 0 end
    print(opts.out .. " is stale: run luajit tools/gen-docs.lua and commit the result")
    return 1
  end
  local f = assert(io.open(opts.out, "wb"))
  f:write(text)
  f:close()
  print(string.format("wrote %s (%d scripts)", opts.out, #scripts))
  return 0
end

os.exit(main(arg or {}))
