-- SPDX-License-Identifier: BSD-3-Clause
-- The backend specs run against (interface: spec/support/README.md).
--
--   local backend = require("support.backend")
--   local r = backend.new()   -- RLK_BACKEND=mock (default) or redis
--
-- Both backends answer in the canonical reply form of support.reply, and
-- both have one PSUBSCRIBE * subscriber, so PUBLISH replies 1 on each (plus
-- whatever other subscribers the spec adds on the real server).

local reply = require("support.reply")
local mock = require("support.mock")

local backend = {}
backend.NIL = reply.NIL
backend.reply = reply

-- Repository root: $RLK_ROOT, else derived from this file's path
-- (<root>/spec/support/backend.lua), else the working directory.
local function repo_root()
  local env = os.getenv("RLK_ROOT")
  if env and env ~= "" then return env end
  local src = debug.getinfo(1, "S").source
  if src:sub(1, 1) == "@" then
    local path = src:sub(2)
    local root = path:match("^(.*)/spec/support/backend%.lua$")
    if root then return (root == "") and "/" or root end
  end
  return "."
end
backend.root = repo_root()

-- Name of the backend chosen by the environment: "mock" or "redis".
function backend.default_name()
  local name = os.getenv("RLK_BACKEND")
  if name == nil or name == "" then return "mock" end
  if name ~= "mock" and name ~= "redis" then
    error("RLK_BACKEND must be 'mock' or 'redis', not '" .. name .. "'", 2)
  end
  return name
end

local function valid_script_name(name)
  if type(name) ~= "string" or name == "" then return false end
  for segment in (name .. "/"):gmatch("(.-)/") do
    if not segment:match("^[%w_%-]+$") then return false end
  end
  return true
end

function backend.script_path(name)
  if not valid_script_name(name) then
    error("bad script name: " .. tostring(name), 2)
  end
  return backend.root .. "/scripts/" .. name .. ".lua"
end

-- scripts/<name>.lua with its includes expanded by tools/expand.lua: the exact bytes the build
-- embeds and bundles, what Redis runs. Expanded once per name while this module is loaded.
local expand, expanded = nil, {}
function backend.read_script(name)
  local path = backend.script_path(name)
  if expanded[path] then return expanded[path] end
  local f, err = io.open(path, "rb")
  if not f then error("no script '" .. name .. "': " .. tostring(err), 2) end
  f:close()
  expand = expand or dofile(backend.root .. "/tools/expand.lua")
  local src, why = expand.file(path, backend.root .. "/scripts")
  if not src then error("script '" .. name .. "': " .. why, 2) end
  expanded[path] = src
  return src
end

-- The Functions library built from scripts/ by tools/gen-functions.lua (release "spec"), once.
local gen_functions, library = nil, nil
function backend.library()
  gen_functions = gen_functions or dofile(backend.root .. "/tools/gen-functions.lua")
  library = library or gen_functions.library(gen_functions.read_scripts(backend.root .. "/scripts"), "spec")
  return library, gen_functions
end

-- How Backend:script calls a script: "eval" (default) or, with RLK_CALL=fcall, through the
-- library (FUNCTION LOAD once per backend, then FCALL, or FCALL_RO for a no-writes script).
function backend.default_call()
  local how = os.getenv("RLK_CALL")
  if how == nil or how == "" then return "eval" end
  if how ~= "eval" and how ~= "fcall" then error("RLK_CALL must be 'eval' or 'fcall', not '" .. how .. "'", 2) end
  return how
end

local function strings(list)
  local out = {}
  for i, v in ipairs(list or {}) do out[i] = mock.to_arg(v) end
  return out
end

local Backend = {}
Backend.__index = Backend

-- opts: backend = "mock"|"redis" (default: $RLK_BACKEND, else mock);
-- mock: now_ms (start of the virtual clock), strict_keys (a script may
-- touch only keys in KEYS); redis: port / socket (default: environment).
function backend.new(opts)
  opts = opts or {}
  local name = opts.backend or backend.default_name()
  local self = setmetatable({ name = name, opts = opts }, Backend)
  if name == "mock" then
    self.virtual_time = true
  elseif name == "redis" then
    self.virtual_time = false
    self.real = require("support.real").new(opts)
  else
    error("unknown backend '" .. tostring(name) .. "'", 2)
  end
  self:reset()
  return self
end

-- Empties the database: a fresh mock, or FLUSHDB on the real server. Forgets
-- what was published so far.
function Backend:reset()
  if self.name == "mock" then
    self.mock = mock.new({ now_ms = self.opts.now_ms, strict_keys = self.opts.strict_keys })
    self.library_loaded = false
    self.mock:psubscribe("*")
    return
  end
  local r = self.real:command({ "FLUSHDB" })
  if not reply.is_status(r) then error("FLUSHDB failed: " .. reply.describe(r), 2) end
  self.real:sunsubscribe_all()
end

-- Subscribes the backend's subscriber to shard channel (SSUBSCRIBE): SPUBLISH on it then counts
-- 1 and published() logs its messages (marked sharded = true). reset() forgets it. The mock logs
-- every SPUBLISH; real Redis lets the subscriber hear only the shard channels it subscribed, so a
-- spec that compares SPUBLISHed messages on both backends ssubscribes their channels first.
function Backend:ssubscribe(channel)
  if self.name == "mock" then return self.mock:ssubscribe(channel) end
  return self.real:ssubscribe(channel)
end

-- One command; numbers among the arguments are sent as decimal text.
function Backend:call(...)
  local argv = {}
  for i = 1, select("#", ...) do argv[i] = mock.to_arg((select(i, ...))) end
  return self:command(argv)
end

function Backend:command(argv)
  if self.name == "mock" then return self.mock:command(argv) end
  return self.real:command(argv)
end

-- EVAL of a literal script body.
function Backend:eval(src, keys, args)
  keys, args = strings(keys), strings(args)
  if self.name == "mock" then return self.mock:eval(src, keys, args) end
  local argv = { "EVAL", src, tostring(#keys) }
  for _, k in ipairs(keys) do argv[#argv + 1] = k end
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  return self.real:command(argv)
end

-- EVAL of scripts/<name>.lua, expanded (backend.read_script); with RLK_CALL=fcall its function.
function Backend:script(name, keys, args)
  if (self.opts.call or backend.default_call()) == "fcall" then return self:fcall_script(name, keys, args) end
  return self:eval(backend.read_script(name), keys, args)
end

-- FUNCTION LOAD REPLACE of the library (backend.library).
function Backend:load_library()
  local r = self:command({ "FUNCTION", "LOAD", "REPLACE", (backend.library()) })
  if r ~= "rlk" then error("FUNCTION LOAD failed: " .. reply.describe(r), 2) end
  self.library_loaded = true
end

-- FCALL (FCALL_RO for a no-writes script) of scripts/<name>.lua's function, rlk_<kind>_<op>.
function Backend:fcall_script(name, keys, args)
  local _, gf = backend.library()
  if not self.library_loaded then self:load_library() end
  keys, args = strings(keys), strings(args)
  local ro = gf.no_writes(backend.read_script(name))
  local argv = { ro and "FCALL_RO" or "FCALL", (gf.function_name(name)), tostring(#keys) }
  for _, k in ipairs(keys) do argv[#argv + 1] = k end
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  return self:command(argv)
end

function Backend:published()
  if self.name == "mock" then return self.mock:published() end
  return self.real:published()
end

-- Server time in ms (the virtual clock on the mock, TIME on Redis).
function Backend:time_ms()
  local t = self:command({ "TIME" })
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

function Backend:advance(ms)
  if not self.virtual_time then
    error("advance() needs the mock's virtual clock (backend '" .. self.name
      .. "'); declare the spec with helpers.it_virtual", 2)
  end
  return self.mock:advance(ms)
end

function Backend:close()
  if self.real then self.real:close() end
end

return backend
