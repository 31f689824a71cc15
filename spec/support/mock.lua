-- SPDX-License-Identifier: BSD-3-Clause
-- A small Redis 7.0 in Lua 5.1 (runs under LuaJIT and PUC Lua 5.1).
--
--   local mock = require("support.mock")
--   local m = mock.new{ now_ms = 1700000000000, strict_keys = false }
--   m:call("HSET", "k", "f", 1)          -- one command, canonical reply
--   m:command({ "HSET", "k", "f", "1" }) -- the same with an argv table
--   m:eval(src, keys, args)              -- EVAL (sandbox as Redis 7.0's)
--   m:evalsha(sha, keys, args), m:script_load(src)
--   m:advance(ms), m:now()               -- the virtual clock (keys expire lazily)
--   m:psubscribe("*"), m:subscribe(ch)   -- counted by PUBLISH's reply
--   m:ssubscribe(ch)                     -- counted by SPUBLISH's reply (shard channels only)
--   m:published()                        -- PUBLISHed and SPUBLISHed messages since the last call
--   m.logs                               -- redis.log() lines: { level=, message= }
--
-- Replies are in the canonical form of support.reply (errors are returned as
-- {err = "..."}, never raised). Data types: string, hash, list, set, zset, stream (XADD XLEN XRANGE).
-- Expiry follows Redis: a key whose expire time T has passed (now > T) is
-- gone; a PEXPIRE/SET PXAT to a time <= now deletes at once.

local util = require("support.mock_util")
local int64 = require("support.int64")

-- Under LuaJIT: room for the machine code of the mock and the scripts it runs. With the default
-- area (512 KB, 1000 traces) a long run (tools/modelcheck: 10^5 script calls) fills it, flushes
-- every trace and compiles them again, over and over: up to 4 times the CPU, most of it the
-- kernel's (an mprotect per trace).
if jit then jit.opt.start("maxmcode=16384", "maxtrace=10000") end

local mock = {}
mock.NIL = util.NIL
mock.DEFAULT_NOW_MS = 1700000000000
mock.REDIS_VERSION = "7.0.15"
mock.REDIS_VERSION_NUM = 458767

local Mock = {}
Mock.__index = Mock
mock.Mock = Mock

-- Command table ---------------------------------------------------------

-- name (lowercase) -> { name, fn(m, argv), arity, first, last, step, flags }
-- arity, first/last/step: as in Redis's command table (negative arity:
-- at least that many; last = -1: up to the last argument).
local commands = {}
mock.commands = commands

local function register(name, arity, fn, keys, flags)
  keys = keys or {}
  commands[name] = {
    name = name,
    fn = fn,
    arity = arity,
    first = keys[1] or 0,
    last = keys[2] or 0,
    step = keys[3] or 0,
    flags = flags or {},
  }
end

local function arity_ok(spec, argc)
  if spec.arity >= 0 then return argc == spec.arity end
  return argc >= -spec.arity
end

-- Key positions of a command call (1-based indexes into argv).
local function key_positions(spec, argc)
  local out = {}
  if spec.first == 0 then return out end
  local last = spec.last
  if last < 0 then last = argc + last end
  for i = spec.first + 1, last + 1, spec.step do
    if i <= argc then out[#out + 1] = i end
  end
  return out
end
mock.key_positions = key_positions

-- The whole of "unknown command" as Redis 7.0 words it.
local function unknown_command(argv)
  local args = ""
  for i = 2, #argv do
    if #args >= 128 then break end
    args = args .. "'" .. argv[i]:sub(1, 128 - #args) .. "' "
  end
  local msg = "ERR unknown command '" .. argv[1]:sub(1, 128)
    .. "', with args beginning with: " .. args
  return { err = (msg:gsub("[\r\n]", " ")) }
end

-- Construction, clock ----------------------------------------------------

function mock.new(opts)
  opts = opts or {}
  local m = setmetatable({}, Mock)
  m.clock = opts.now_ms or mock.DEFAULT_NOW_MS
  m.strict_keys = opts.strict_keys and true or false
  -- line_hook = false: no per-line debug hook while a script runs (about 10x faster); the line of
  -- an error a script raises is then taken from the stack alone, which a tail call can hide.
  m.line_hook = opts.line_hook ~= false
  -- call_hook(argv, reply, raise): called after each redis.call (raise true) / redis.pcall
  -- (raise false) of a script with the command and its canonical reply (tools/trace, tools/modelcheck).
  m.call_hook = opts.call_hook
  m.data = {}
  m.scripts = {}
  m.logs = {}
  m.publications = {}
  m.unread = 1
  m.channel_subs = {}
  m.pattern_subs = {}
  m.shard_subs = {}
  return m
end

function Mock:now()
  return self.clock
end

-- Moves the virtual clock forward by ms (>= 0); keys expire lazily.
function Mock:advance(ms)
  if type(ms) ~= "number" or ms ~= ms or ms < 0 then
    error("advance: ms must be a number >= 0, got " .. tostring(ms), 2)
  end
  self.clock = self.clock + ms
  return self.clock
end

function Mock:set_now(ms)
  if type(ms) ~= "number" or ms ~= ms then
    error("set_now: ms must be a number", 2)
  end
  self.clock = ms
end

-- Keyspace ---------------------------------------------------------------

local function expired(m, e)
  return e.expire ~= nil and m.clock > e.expire
end

-- The live entry of a key ({type=, value=, expire=}) or nil.
function Mock:lookup(key)
  local e = self.data[key]
  if e and expired(self, e) then
    self.data[key] = nil
    return nil
  end
  return e
end

-- The live entry when it has the given type; nil when missing; nil and a
-- WRONGTYPE error reply when it holds another type.
function Mock:typed(key, kind)
  local e = self:lookup(key)
  if e and e.type ~= kind then return nil, util.wrongtype() end
  return e
end

-- Stores a new value (no expire) and returns its entry.
function Mock:store(key, kind, value)
  local e = { type = kind, value = value }
  self.data[key] = e
  return e
end

function Mock:delete(key)
  local existed = self:lookup(key) ~= nil
  self.data[key] = nil
  return existed
end

-- Live keys, sorted.
function Mock:keys()
  local out = {}
  for k in pairs(self.data) do
    if self:lookup(k) then out[#out + 1] = k end
  end
  table.sort(out)
  return out
end

function Mock:flush()
  self.data = {}
end

-- Sets an absolute expire time in ms; a time <= now deletes the key at
-- once (as EXPIRE/PEXPIRE/PEXPIREAT do). Returns true when the key is kept.
function Mock:expire_at(key, when)
  if when <= self.clock then
    self.data[key] = nil
    return false
  end
  local e = self:lookup(key)
  if e then e.expire = when end
  return e ~= nil
end

-- Pub/sub ----------------------------------------------------------------

local function bump(tbl, key, delta)
  local n = (tbl[key] or 0) + delta
  if n <= 0 then n = nil end
  tbl[key] = n
end

function Mock:subscribe(channel) bump(self.channel_subs, channel, 1) end
function Mock:unsubscribe(channel) bump(self.channel_subs, channel, -1) end
function Mock:psubscribe(pattern) bump(self.pattern_subs, pattern, 1) end
function Mock:punsubscribe(pattern) bump(self.pattern_subs, pattern, -1) end

function Mock:ssubscribe(channel) bump(self.shard_subs, channel, 1) end
function Mock:sunsubscribe(channel) bump(self.shard_subs, channel, -1) end

-- Logs the message; returns the number of subscribers that receive it.
function Mock:publish(channel, message)
  local n = self.channel_subs[channel] or 0
  local patterns = {}
  for p in pairs(self.pattern_subs) do patterns[#patterns + 1] = p end
  table.sort(patterns)
  for _, p in ipairs(patterns) do
    if util.glob_match(p, channel) then n = n + self.pattern_subs[p] end
  end
  self.publications[#self.publications + 1] = { channel = channel, message = message }
  return n
end

-- SPUBLISH (Redis 7 sharded pub/sub): only the shard channel's subscribers (SSUBSCRIBE) receive
-- it, never SUBSCRIBE or PSUBSCRIBE ones. Logged in the same log, marked sharded.
function Mock:spublish(channel, message)
  self.publications[#self.publications + 1] = { channel = channel, message = message, sharded = true }
  return self.shard_subs[channel] or 0
end

-- Messages published since the last call (or since new()), oldest first; an SPUBLISHed one
-- carries sharded = true.
function Mock:published()
  local out = {}
  for i = self.unread, #self.publications do
    local p = self.publications[i]
    out[#out + 1] = { channel = p.channel, message = p.message, sharded = p.sharded }
  end
  self.unread = #self.publications + 1
  return out
end

-- Dispatch ---------------------------------------------------------------

local function to_arg(v)
  if type(v) == "string" then return v end
  if type(v) == "number" then
    if v == math.floor(v) and math.abs(v) < 2 ^ 63 then return int64.from_number(v) end
    return string.format("%.17g", v)
  end
  error("command arguments must be strings or numbers, got " .. type(v), 3)
end
mock.to_arg = to_arg

-- Runs one command as a client would send it. argv[1] is the command name.
function Mock:command(argv)
  if #argv == 0 then return util.ERR("empty command") end
  local spec = commands[argv[1]:lower()]
  if not spec then return unknown_command(argv) end
  if not arity_ok(spec, #argv) then return util.arity(spec.name) end
  return spec.fn(self, argv)
end

-- The same with the arguments as varargs (numbers are converted).
function Mock:call(...)
  local argv = {}
  for i = 1, select("#", ...) do argv[i] = to_arg((select(i, ...))) end
  return self:command(argv)
end

-- Runs a command for redis.call/redis.pcall: the checks and error texts
-- Redis applies to commands called from a script. `keys` is the script's
-- KEYS (checked when strict_keys is on).
function Mock:script_command(argv, keys)
  local spec = commands[argv[1]:lower()]
  if not spec then return util.ERR("Unknown Redis command called from script") end
  if spec.flags.noscript then
    return util.ERR("This Redis command is not allowed from script")
  end
  if not arity_ok(spec, #argv) then
    return util.ERR("Wrong number of args calling Redis command from script")
  end
  if self.strict_keys and keys then
    local declared = {}
    for _, k in ipairs(keys) do declared[k] = true end
    for _, pos in ipairs(key_positions(spec, #argv)) do
      if not declared[argv[pos]] then
        return util.ERR("rlk-mock: script accessed key '" .. argv[pos]
          .. "' that is not in KEYS (strict_keys)")
      end
    end
  end
  return spec.fn(self, argv)
end

-- Subcommand helper: `table` maps lowercase subcommand -> { arity, fn }.
function mock.subcommands(parent, subs)
  return function(m, argv)
    local sub = argv[2]:lower()
    local spec = subs[sub]
    if not spec then
      return util.ERR("unknown subcommand '" .. argv[2]:sub(1, 128) .. "'. Try "
        .. parent:upper() .. " HELP.")
    end
    local argc = #argv
    local ok = (spec.arity >= 0 and argc == spec.arity) or (spec.arity < 0 and argc >= -spec.arity)
    if not ok then return util.arity(parent .. "|" .. sub) end
    return spec.fn(m, argv)
  end
end

local api = { register = register, util = util, int64 = int64, mock = mock }
require("support.mock_keys")(api)
require("support.mock_strings")(api)
require("support.mock_hashes")(api)
require("support.mock_lists")(api)
require("support.mock_sets")(api)
require("support.mock_zsets")(api)
require("support.mock_streams")(api)
require("support.mock_script")(api)

return mock
