-- SPDX-License-Identifier: BSD-3-Clause
-- gen-functions.lua: the Redis 7 Functions library `rlk` built from the expanded scripts
-- (docs/ops.md, "Functions library"). Plain Lua 5.1: runs under LuaJIT and PUC Lua 5.1, as a
-- module and as a command.
--
--   luajit tools/gen-functions.lua --bundle DIR --lua OUT.lua [--c OUT.c]
--       DIR: a bundle (manifest.tsv + <kind>/<op>.lua, expanded: tools/embed.cmake writes one);
--       writes the library (share/rlk/functions.lua) and, with --c, the C file that embeds it
--       (rlk_embedded_library, the SHA-1s of the no-writes scripts); each only when its bytes change
--   luajit tools/gen-functions.lua scripts       print the library built from a scripts directory
--   local gf = require("gen-functions")          (package.path: tools/?.lua)
--   gf.library(scripts, release)                 the library text; scripts: { name=, version=,
--                                                numkeys=, sha1=, body= } sorted by name
--   gf.function_name("reentrant/acquire")        "rlk_reentrant_acquire"
--   gf.no_writes(body)                           true when the script only reads
--   gf.scripts_id(scripts)                       SHA-1 of the manifest lines (rlk_script_set_id)
--
-- The library: `#!lua name=rlk`, a comment naming the release and the scripts' identity, the
-- function rlk_version (no-writes) replying { 'rlk', <release>, <scripts id> }, then one function
-- per script, rlk_<kind>_<op>, whose callback is `function(keys, args) local KEYS, ARGV = keys,
-- args` followed by the expanded script's bytes unchanged (its header comment included). A script
-- whose every redis.call / redis.pcall names a read-only command gets the flag no-writes (FCALL_RO).

local tool_dir = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "tools"
if not package.path:find(tool_dir .. "/?.lua", 1, true) then
  package.path = tool_dir .. "/?.lua;" .. package.path
end
local expand = require("expand")
local sha1 = require("sha1")

local M = {}

-- Commands without the write or may-replicate flag (Redis 7 refuses those in a no-writes script).
local READ_ONLY = {}
for c in ([[exists get hexists hget hgetall hkeys hlen hmget hvals lindex llen lrange mget pttl
           scard sismember smembers strlen time ttl type zcard zcount zrange zrangebyscore zrank
           zscore]]):gmatch("%S+") do
  READ_ONLY[c] = true
end

function M.function_name(name)
  local fn = "rlk_" .. name:gsub("/", "_")
  if not fn:match("^[%w_]+$") then return nil, name .. ": a function name allows only letters, digits, _" end
  return fn
end

function M.no_writes(body)
  local calls, named = 0, 0
  for _ in body:gmatch("redis%.p?call%s*%(") do calls = calls + 1 end
  for cmd in body:gmatch("redis%.p?call%s*%(%s*['\"]([%w_]+)['\"]") do
    named = named + 1
    if not READ_ONLY[cmd:lower()] then return false end
  end
  return named == calls   -- a command name the text does not spell out may write
end

function M.manifest_line(s)
  return s.name .. "\t" .. s.version .. "\t" .. s.numkeys .. "\t" .. s.sha1 .. "\n"
end

function M.scripts_id(scripts)
  local lines = {}
  for i, s in ipairs(scripts) do lines[i] = M.manifest_line(s) end
  return sha1.hex(table.concat(lines))
end

local HEAD = [[
#!lua name=rlk
-- rlk %s: the Redis 7 Functions library, one function per script (rlk_<kind>_<op>), generated from
-- scripts/ by tools/gen-functions.lua: do not edit. The library's identity is the SHA-1 of this
-- file's bytes: `rlk functions verify` compares them with the code the server holds (FUNCTION LIST
-- WITHCODE). rlk_version replies { 'rlk', release, scripts id }; the scripts id is the SHA-1 of the
-- manifest lines (name, version, numkeys, SHA-1 of each expanded script) that a client compares with
-- its own script set before it calls FCALL instead of EVALSHA.
-- scripts id: %s

redis.register_function{
  function_name = 'rlk_version',
  callback = function() return { 'rlk', '%s', '%s' } end,
  flags = { 'no-writes' },
}
]]

-- Each script's body runs unchanged: KEYS and ARGV are the callback's arguments.
local ENTRY = [[

-- %s v%d, SHA-1 %s
redis.register_function{
  function_name = '%s',%s
  callback = function(keys, args)
local KEYS, ARGV = keys, args
%s
  end,
}
]]

function M.library(scripts, release)
  release = release or ""
  assert(not release:find("[^%w%.%-%+_]"), "release version: only letters, digits, . - + _")
  local id = M.scripts_id(scripts)
  local parts, seen = { HEAD:format(release, id, release, id) }, {}
  for _, s in ipairs(scripts) do
    local fn = assert(M.function_name(s.name))
    assert(not seen[fn], fn .. ": two scripts map to this function name")
    seen[fn] = true
    local body = s.body:gsub("\n$", "")
    parts[#parts + 1] = ENTRY:format(s.name, s.version, s.sha1, fn,
      M.no_writes(s.body) and "\n  flags = { 'no-writes' }," or "", body)
  end
  return table.concat(parts)
end

-- The scripts of a bundle directory, from its manifest (sorted by name) and files.
function M.read_bundle(dir)
  local manifest = assert(expand.read_file(dir .. "/manifest.tsv"))
  local release = manifest:match("^# rlk ([^\n]*)\n") or ""
  local scripts = {}
  for line in manifest:gmatch("[^\n]+") do
    if line:sub(1, 1) ~= "#" then
      local name, version, numkeys, sum = line:match("^([^\t]+)\t(%d+)\t(%-?%d+)\t(%x+)$")
      assert(name, dir .. "/manifest.tsv: bad line " .. line)
      local body = assert(expand.read_file(dir .. "/" .. name .. ".lua"))
      assert(sha1.hex(body) == sum, dir .. "/" .. name .. ".lua: SHA-1 differs from the manifest's")
      scripts[#scripts + 1] = { name = name, version = tonumber(version), numkeys = tonumber(numkeys),
                                sha1 = sum, body = body }
    end
  end
  return scripts, release
end

-- The scripts of a scripts directory, expanded (numkeys as tools/embed.cmake counts them).
function M.read_scripts(root)
  local scripts = {}
  for _, path in ipairs(expand.scripts(root)) do
    local body = assert(expand.file(path, root))
    local name = path:sub(#root + 2):gsub("%.lua$", "")
    local numkeys = 0
    for k in body:match("^(.-)\n%-%- end\n"):gmatch("\n%-%- KEYS%[([%d%.n]+)%]:") do
      if k:find("%.%.") then numkeys = -1 break end
      numkeys = numkeys + 1
    end
    scripts[#scripts + 1] = { name = name, version = tonumber(body:match("\n%-%- version: (%d+)\n")),
                              numkeys = numkeys, sha1 = sha1.hex(body), body = body }
  end
  table.sort(scripts, function(a, b) return a.name < b.name end)
  return scripts
end

local function c_string(s)
  local out = {}
  for i = 1, #s, 16 do
    local row = {}
    for j = i, math.min(i + 15, #s) do row[#row + 1] = string.format("0x%02x,", s:byte(j)) end
    out[#out + 1] = "    " .. table.concat(row)
  end
  return table.concat(out, "\n")
end

function M.c_source(scripts, release, text)
  local ro, ro_names = {}, {}
  for _, s in ipairs(scripts) do
    if M.no_writes(s.body) then
      ro[#ro + 1] = '    "' .. s.sha1 .. '", /* ' .. s.name .. ' */'
      ro_names[#ro_names + 1] = '    "' .. s.name .. '",'
    end
  end
  return table.concat({
    "/* Generated by tools/gen-functions.lua from the bundle: do not edit. */",
    "#include <stddef.h>",
    '#include "client/functions.h"',
    "",
    "static const unsigned char rlk_library_code[] = {",
    c_string(text),
    "    0x00",
    "};",
    "",
    "const rlk_library_info rlk_embedded_library_info = {",
    '    "rlk", "' .. release .. '", "' .. M.scripts_id(scripts) .. '", "' .. sha1.hex(text) .. '",',
    "    (const char *)rlk_library_code, " .. #text,
    "};",
    "",
    "/* The SHA-1s of the scripts flagged no-writes (called with FCALL_RO); NULL ends the list. */",
    "const char *const rlk_no_writes_sha1[] = {",
    table.concat(ro, "\n"),
    "    NULL",
    "};",
    "",
    "/* Their names: a bundle's script is known by its name. */",
    "const char *const rlk_no_writes_name[] = {",
    table.concat(ro_names, "\n"),
    "    NULL",
    "};",
    "",
  }, "\n")
end

local function write_if_changed(path, text)
  if expand.read_file(path) == text then return end
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function main(args)
  local opts, i = {}, 1
  while i <= #args do
    local a = args[i]
    if a == "--bundle" or a == "--lua" or a == "--c" then
      opts[a:sub(3)] = args[i + 1]
      i = i + 2
    elseif a:sub(1, 1) ~= "-" and not opts.scripts then
      opts.scripts = a
      i = i + 1
    else
      io.stderr:write("usage: gen-functions.lua --bundle DIR --lua OUT.lua [--c OUT.c]\n"
        .. "       gen-functions.lua SCRIPTS_DIR\n")
      return 2
    end
  end
  if opts.scripts and not opts.bundle then
    io.write(M.library(M.read_scripts((opts.scripts:gsub("/+$", "")))))
    return 0
  end
  if not opts.bundle or not opts.lua then return main({ "-" }) end
  local ok, scripts, release = pcall(M.read_bundle, opts.bundle)
  if not ok then
    io.stderr:write("gen-functions: ", tostring(scripts), "\n")
    return 1
  end
  local text = M.library(scripts, release)
  write_if_changed(opts.lua, text)
  if opts.c then write_if_changed(opts.c, M.c_source(scripts, release, text)) end
  return 0
end

if arg and arg[0] and arg[0]:match("gen%-functions%.lua$") and (...) ~= "gen-functions" then
  os.exit(main(arg))
end

return M
