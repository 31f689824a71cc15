-- SPDX-License-Identifier: BSD-3-Clause
-- Script execution in the mock: a sandbox like Redis 7.0's, the Lua <-> RESP
-- conversions, error texts, and the EVAL / EVALSHA / SCRIPT commands.
--
-- Sandbox (checked against redis-server 7.0.15): the globals of Redis's
-- Lua (base library without dofile/loadfile/print/require/module/getfenv/
-- setfenv/newproxy; load and loadstring are kept; string, table, math,
-- coroutine, bit; redis; KEYS and ARGV). The global table and the library
-- tables are read-only: assigning a global raises "Attempt to modify a
-- readonly table", reading an undefined one raises "Script attempted to
-- access nonexistent global variable 'x'". math.random is Redis's
-- generator (redisLrand48); as in Redis 7.0 its state carries over from one
-- script to the next (it starts from seed 0 in a new mock). Real Redis does
-- not reseed per script either, so random values differ between backends.
-- Not provided: cjson, cmsgpack, struct (their tables raise when used).

local sha1hex = require("support.sha1")
local bitlib = require("support.bitop")
local reply = require("support.reply")

local THIS_SOURCE = debug.getinfo(1, "S").source

return function(api)
  local register, util, mock = api.register, api.util, api.mock
  local Mock = mock.Mock
  local NIL = util.NIL

  -- Frames that belong to the mock's own implementation of Redis's C API.
  local internal = { [THIS_SOURCE] = true }
  local bit_info = debug.getinfo(bitlib.band, "S")
  if bit_info.what ~= "C" then internal[bit_info.source] = true end

  local READONLY = "Attempt to modify a readonly table"

  -- Read-only proxies ----------------------------------------------------

  -- Weak keys and values: a backing table refers to its proxy (the globals' _G), and Lua 5.1 has no
  -- ephemerons, so with weak keys only every script's environment would stay alive for ever. A
  -- proxy keeps its backing table alive through its metatable, so no live entry is dropped.
  local backing_of = setmetatable({}, { __mode = "kv" })

  local function readonly(tbl, strict)
    local proxy = {}
    backing_of[proxy] = tbl
    local index = tbl
    if strict then
      index = function(_, k)
        local v = tbl[k]
        if v == nil then
          error("Script attempted to access nonexistent global variable '"
            .. tostring(k) .. "'", 2)
        end
        return v
      end
    end
    return setmetatable(proxy, {
      __index = index,
      __newindex = function() error(READONLY, 2) end,
    })
  end

  local function unavailable(name)
    return setmetatable({}, {
      __index = function(_, k)
        error("rlk-mock: " .. name .. "." .. tostring(k) .. " is not available in the mock", 2)
      end,
      __newindex = function() error(READONLY, 2) end,
    })
  end

  local function copy(t)
    local c = {}
    for k, v in pairs(t) do c[k] = v end
    return c
  end

  local STRING, TABLE = readonly(copy(string)), readonly(copy(table))
  local COROUTINE, BIT = readonly(copy(coroutine)), readonly(copy(bitlib))
  local CJSON, CMSGPACK, STRUCT = unavailable("cjson"), unavailable("cmsgpack"), unavailable("struct")

  -- Redis's PRNG (redisLrand48: 48-bit LCG, a = 0x5DEECE66D, c = 0xB) --------

  local TWO24, TWO48 = 16777216, 281474976710656
  local A_HI, A_LO = 0x5DE, 0xECE66D

  local function srand48(seed)
    seed = seed % 4294967296
    return 0x330E + seed * 65536
  end

  local function lrand48(state)
    local xh, xl = math.floor(state / TWO24), state % TWO24
    local lo = A_LO * xl
    local mid = (A_LO * xh + A_HI * xl) % TWO24
    local nxt = (lo + mid * TWO24 + 0xB) % TWO48
    return nxt, math.floor(nxt / 131072)
  end

  -- state: the mock; state.rand holds the generator's 48-bit state.
  local function make_math(state)
    local m = copy(math)
    local function to_int(x, i)
      local n = tonumber(x)
      if n == nil then
        error("bad argument #" .. i .. " to 'random' (number expected, got "
          .. type(x) .. ")", 3)
      end
      return (n >= 0) and math.floor(n) or math.ceil(n)
    end
    m.random = function(...)
      local value
      state.rand, value = lrand48(state.rand)
      local r = (value % 2147483647) / 2147483647
      local n = select("#", ...)
      if n == 0 then return r end
      if n == 1 then
        local u = to_int((...), 1)
        if u < 1 then error("bad argument #1 to 'random' (interval is empty)", 2) end
        return math.floor(r * u) + 1
      end
      if n == 2 then
        local l, u = to_int((...), 1), to_int((select(2, ...)), 2)
        if l > u then error("bad argument #2 to 'random' (interval is empty)", 2) end
        return math.floor(r * (u - l + 1)) + l
      end
      error("wrong number of arguments", 2)
    end
    m.randomseed = function(seed)
      state.rand = srand48(to_int(seed, 1))
    end
    return readonly(m)
  end

  -- Conversions ------------------------------------------------------------

  -- Redis reply (canonical) -> Lua value, as redis.call returns it.
  local function to_lua(v)
    if v == NIL then return false end
    if type(v) ~= "table" then return v end
    if v.ok then return { ok = v.ok } end
    if v.err then return { err = v.err } end
    local t = {}
    for i = 1, #v do t[i] = to_lua(v[i]) end
    return t
  end

  local function one_line(s)
    return (s:gsub("[\r\n]", " "))
  end

  -- (long long) of a double as x86-64 converts it: toward zero; NaN and
  -- out-of-range values give LLONG_MIN.
  local function truncate(n)
    if n ~= n or n >= 2 ^ 63 or n < -2 ^ 63 then return -2 ^ 63 end
    if n >= 0 then return math.floor(n) end
    return math.ceil(n) + 0
  end

  -- Lua value -> Redis reply (canonical), as a script's return value is sent.
  local function from_lua(v)
    local t = type(v)
    if t == "string" then return v end
    if t == "number" then return truncate(v) end
    if t == "boolean" then return v and 1 or NIL end
    if t ~= "table" then return NIL end
    local e = rawget(v, "err")
    if type(e) == "string" then return { err = one_line(e) } end
    local ok = rawget(v, "ok")
    if type(ok) == "string" then return { ok = one_line(ok) } end
    local d = rawget(v, "double")
    if type(d) == "number" then return util.format_double(d) end
    local out = {}
    local i = 1
    while true do
      local item = rawget(v, i)
      if item == nil then break end
      out[i] = from_lua(item)
      i = i + 1
    end
    return out
  end

  -- luaPushErrorBuff: the error table redis.call raises / redis.pcall
  -- returns. "-CODE msg" keeps its code; "-msg" (no space) and "msg" (no
  -- leading '-') get the code ERR.
  local function error_table(buf)
    local code, msg
    if buf:sub(1, 1) == "-" then
      local sp = buf:find(" ", 1, true)
      if sp then
        code, msg = buf:sub(2, sp - 1), buf:sub(sp + 1)
      else
        code, msg = "ERR", buf:sub(2)
      end
    else
      code, msg = "ERR", buf
    end
    msg = msg:gsub("^[\r\n]+", ""):gsub("[\r\n]+$", "")
    return { err = code .. " " .. msg }
  end

  -- redis.* ----------------------------------------------------------------

  local function api_error(msg)
    return error_table(msg)
  end

  local function arg_string(v)
    if type(v) == "string" then return v end
    if type(v) == "number" then return string.format("%.17g", v) end
    return nil
  end

  local function make_call(m, keys, raise)
    return function(...)
      local n = select("#", ...)
      local e
      if n == 0 then
        e = api_error("Please specify at least one argument for this redis lib call")
      else
        local argv = {}
        for i = 1, n do
          argv[i] = arg_string((select(i, ...)))
          if argv[i] == nil then
            e = api_error("Lua redis lib command arguments must be strings or integers")
            break
          end
        end
        if not e then
          local res = m:script_command(argv, keys)
          if m.call_hook then m.call_hook(argv, res, raise) end
          if not reply.is_error(res) then return to_lua(res) end
          e = error_table("-" .. res.err)
        end
      end
      if raise then error(e) end
      return e
    end
  end

  local function single_field(field)
    return function(...)
      local s = ...
      if select("#", ...) ~= 1 or type(s) ~= "string" then
        return api_error("wrong number or type of arguments")
      end
      if field == "ok" then return { ok = s } end
      return error_table((s:sub(1, 1) == "-") and s or ("-" .. s))
    end
  end

  local function redis_log(m)
    return function(...)
      local argc = select("#", ...)
      if argc < 2 then error(api_error("redis.log() requires two arguments or more.")) end
      local level = tonumber((...))
      if level == nil then error(api_error("First argument must be a number (log level).")) end
      level = (level >= 0) and math.floor(level) or math.ceil(level)
      if level < 0 or level > 3 then error(api_error("Invalid debug level.")) end
      local parts = {}
      for i = 2, argc do
        local v = select(i, ...)
        if type(v) == "string" or type(v) == "number" then parts[#parts + 1] = tostring(v) end
      end
      m.logs[#m.logs + 1] = { level = level, message = table.concat(parts, " ") }
    end
  end

  local function make_redis(m, keys)
    local r = {
      call = make_call(m, keys, true),
      pcall = make_call(m, keys, false),
      error_reply = single_field("err"),
      status_reply = single_field("ok"),
      log = redis_log(m),
      LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
      REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
      REDIS_VERSION = mock.REDIS_VERSION,
      REDIS_VERSION_NUM = mock.REDIS_VERSION_NUM,
    }
    r.sha1hex = function(...)
      if select("#", ...) ~= 1 then error(api_error("wrong number of arguments")) end
      local s = ...
      if type(s) == "number" then s = tostring(s) end
      if type(s) ~= "string" then s = "" end
      return sha1hex(s)
    end
    r.setresp = function(v)
      if v ~= 2 then error(api_error("rlk-mock: only RESP2 is supported (redis.setresp)")) end
    end
    r.set_repl = function() end
    r.replicate_commands = function() return true end
    r.breakpoint = function() return false end
    r.debug = function() end
    r.acl_check_cmd = function(name)
      if type(name) ~= "string" or not mock.commands[name:lower()] then
        error(api_error("Invalid command passed to redis.acl_check_cmd()"))
      end
      return true
    end
    return readonly(r)
  end

  -- The sandbox ------------------------------------------------------------

  -- Redis 7.0 replaces pcall (luaRedisPcall): an error table with a string
  -- (or number) err field is caught as that value, as if error(e.err).
  local function caught(ok, ...)
    if ok then return true, ... end
    local e = ...
    if type(e) == "table" then
      local msg = e.err
      if type(msg) == "string" or type(msg) == "number" then return false, msg end
    end
    return false, e
  end

  local function sandbox_pcall(f, ...)
    return caught(pcall(f, ...))
  end

  local function base_functions(run)
    local b = {}
    for _, name in ipairs({ "assert", "collectgarbage", "error", "getmetatable", "ipairs",
      "rawequal", "select", "tonumber", "tostring", "type", "unpack", "xpcall" }) do
      b[name] = _G[name]
    end
    b.pcall = sandbox_pcall
    b.gcinfo = rawget(_G, "gcinfo") or function() return math.floor(collectgarbage("count")) end
    b._VERSION = "Lua 5.1"
    b.next = function(t, k)
      return next(backing_of[t] or t, k)
    end
    b.pairs = function(t)
      local inner = backing_of[t]
      if inner then return next, inner, nil end
      local f, s, c = pairs(t)
      return f, s, c
    end
    b.rawget = function(t, k)
      local v = rawget(backing_of[t] or t, k)
      return v
    end
    b.rawset = function(t, k, v)
      if backing_of[t] then error(READONLY, 0) end
      local r = rawset(t, k, v)
      return r
    end
    b.setmetatable = function(t, mt)
      if backing_of[t] then error(READONLY, 0) end
      local r = setmetatable(t, mt)
      return r
    end
    b.loadstring = function(s, chunkname)
      local f, err = loadstring(s, chunkname)
      if not f then return nil, err end
      run.sources[debug.getinfo(f, "S").source] = true
      return setfenv(f, run.env)
    end
    b.load = function(reader, chunkname)
      if type(reader) ~= "function" then
        error("bad argument #1 to 'load' (function expected, got " .. type(reader) .. ")", 2)
      end
      local f, err = load(reader, chunkname)
      if not f then return nil, err end
      run.sources[debug.getinfo(f, "S").source] = true
      return setfenv(f, run.env)
    end
    return b
  end

  local function make_env(m, run, keys, args, no_globals)
    local g = base_functions(run)
    g.string, g.table, g.coroutine, g.bit = STRING, TABLE, COROUTINE, BIT
    g.cjson, g.cmsgpack, g.struct = CJSON, CMSGPACK, STRUCT
    g.math = make_math(m)
    g.redis = make_redis(m, keys)
    if not no_globals then g.KEYS, g.ARGV = keys, args end   -- a function (FCALL) gets neither
    local env = readonly(g, true)
    g._G = env
    return env
  end

  -- Errors raised by scripts ----------------------------------------------

  -- Where Redis's error handler would say the error happened: the innermost
  -- frame of script code (skipping C functions and the mock's stand-ins
  -- for Redis's C API). In Redis those are C functions, which a tail call
  -- does not remove from the stack; here they are Lua functions, and
  -- `return redis.call(...)` replaces the script's frame. PUC Lua 5.1 shows
  -- a "(tail call)" frame there, and the main chunk's frame disappears
  -- completely under LuaJIT; in both cases the last script line the line
  -- hook saw is used. Known gap (LuaJIT only): a tail call to a raising
  -- redis.* function from inside a script's local function reports the
  -- caller's line instead of the function's.
  local function script_position(run)
    local level = 3
    while true do
      local info = debug.getinfo(level, "Sl")
      if not info or info.what == "tail" then break end
      if run.sources[info.source] then return info.source, info.currentline end
      if info.what ~= "C" and not internal[info.source] then break end
      level = level + 1
    end
    return run.last_source, run.last_line
  end

  local function error_handler(run)
    return function(e)
      if type(e) ~= "table" then e = { err = "ERR " .. tostring(e) } end
      local source, line = script_position(run)
      if source and line then
        e.source, e.line = source, line
      end
      return e
    end
  end

  local function script_error(e, sha)
    local msg = e.err
    if type(msg) == "number" then msg = tostring(msg) end
    if type(msg) ~= "string" then msg = "ERR unknown error" end
    if e.source and e.line then
      msg = msg .. " script: " .. sha .. ", on " .. tostring(e.source) .. ":" .. tostring(e.line) .. "."
    end
    return { err = one_line(msg) }
  end

  local function line_hook(run)
    return function(_, line)
      local info = debug.getinfo(2, "S")
      if info and run.sources[info.source] then
        run.last_source, run.last_line = info.source, line
      end
    end
  end

  -- Running ----------------------------------------------------------------

  -- SHA-1 of script bodies, memoised (pure-Lua SHA-1 is slow under PUC Lua,
  -- and specs run the same few scripts many times).
  local sha_cache, sha_cached = {}, 0
  local function script_sha(src)
    local sha = sha_cache[src]
    if not sha then
      if sha_cached >= 1000 then sha_cache, sha_cached = {}, 0 end
      sha = sha1hex(src)
      sha_cache[src] = sha
      sha_cached = sha_cached + 1
    end
    return sha
  end

  -- Compiled bodies, memoised as Redis caches them by SHA-1 (each run sets the chunk's environment
  -- afresh, so a chunk is reused safely; the model checker runs the same scripts 10^5 times).
  local compiled, compiled_count = {}, 0
  local function compile(src)
    local fn = compiled[src]
    if fn then return fn end
    local err
    fn, err = loadstring(src, "@user_script")
    if not fn then
      return nil, { err = one_line("ERR Error compiling script (new function): " .. err) }
    end
    if compiled_count >= 1000 then compiled, compiled_count = {}, 0 end
    compiled[src] = fn
    compiled_count = compiled_count + 1
    return fn
  end

  local function string_list(list, what)
    local out = {}
    for i, v in ipairs(list or {}) do
      out[i] = mock.to_arg(v)
      if type(out[i]) ~= "string" then error(what .. " must be strings", 3) end
    end
    return out
  end

  function Mock:run_script(fn, sha, keys, args)
    local run = { sources = { ["@user_script"] = true } }
    self.rand = self.rand or srand48(0)
    run.env = make_env(self, run, keys, args)
    setfenv(fn, run.env)
    local old_hook, old_mask, old_count = debug.gethook()
    if self.line_hook then debug.sethook(line_hook(run), "l") end
    local ok, res = xpcall(fn, error_handler(run))
    debug.sethook(old_hook, old_mask, old_count)
    if not ok then return script_error(res, sha) end
    return from_lua(res)
  end

  -- SCRIPT LOAD: caches the body; returns its SHA-1, or nil and the error.
  function Mock:script_load(src)
    local _, err = compile(src)
    if err then return nil, err end
    local sha = script_sha(src)
    self.scripts[sha] = src
    return sha
  end

  -- strict_keys: every key of one EVAL in one hash slot, as a cluster demands.
  local function same_slot(keys)
    for i = 2, #keys do
      if util.key_slot(keys[i]) ~= util.key_slot(keys[1]) then return false end
    end
    return true
  end

  -- EVAL of a script body with KEYS and ARGV (arrays; numbers converted).
  function Mock:eval(src, keys, args)
    keys, args = string_list(keys, "KEYS"), string_list(args, "ARGV")
    if self.strict_keys and not same_slot(keys) then
      return util.err("CROSSSLOT Keys in request don't hash to the same slot")
    end
    local fn, err = compile(src)
    if not fn then return err end
    local sha = script_sha(src)
    self.scripts[sha] = src
    return self:run_script(fn, sha, keys, args)
  end

  function Mock:evalsha(sha, keys, args)
    local src = self.scripts[sha:lower()]
    if not src then return util.err("NOSCRIPT No matching script. Please use EVAL.") end
    return self:eval(src, keys, args)
  end

  -- Commands ---------------------------------------------------------------

  local function split_keys(argv)
    local n = util.int_arg(argv[3])
    if n == nil then return nil, util.not_integer() end
    if n > #argv - 3 then
      return nil, util.ERR("Number of keys can't be greater than number of args")
    end
    if n < 0 then return nil, util.ERR("Number of keys can't be negative") end
    local keys, args = {}, {}
    for i = 4, 3 + n do keys[#keys + 1] = argv[i] end
    for i = 4 + n, #argv do args[#args + 1] = argv[i] end
    return keys, args
  end

  local NOSCRIPT = { noscript = true }

  local function eval_command(m, argv)
    local keys, args = split_keys(argv)
    if not keys then return args end
    return m:eval(argv[2], keys, args)
  end

  local function evalsha_command(m, argv)
    local keys, args = split_keys(argv)
    if not keys then return args end
    return m:evalsha(argv[2], keys, args)
  end

  register("eval", -3, eval_command, nil, NOSCRIPT)
  register("eval_ro", -3, eval_command, nil, NOSCRIPT)
  register("evalsha", -3, evalsha_command, nil, NOSCRIPT)
  register("evalsha_ro", -3, evalsha_command, nil, NOSCRIPT)

  register("script", -2, mock.subcommands("script", {
    load = { arity = 3, fn = function(m, argv)
      local sha, err = m:script_load(argv[3])
      return sha or err
    end },
    exists = { arity = -3, fn = function(m, argv)
      local out = {}
      for i = 3, #argv do out[#out + 1] = m.scripts[argv[i]:lower()] and 1 or 0 end
      return out
    end },
    flush = { arity = -2, fn = function(m, argv)
      if #argv > 3 then return util.syntax() end
      if argv[3] and argv[3]:lower() ~= "async" and argv[3]:lower() ~= "sync" then
        return util.ERR("SCRIPT FLUSH only support SYNC|ASYNC option")
      end
      m.scripts = {}
      return util.ok()
    end },
  }), nil, NOSCRIPT)

  -- Functions (Redis 7): FUNCTION LOAD / DELETE / FLUSH, FCALL / FCALL_RO -------------------
  -- A library's code runs once at load with only redis.register_function of the redis table
  -- (both forms: (name, callback) and { function_name =, callback =, flags = }); a callback then
  -- runs like a script body, called with (keys, args), without KEYS / ARGV globals; its errors
  -- name the function and @user_function. Not modelled: FUNCTION LIST / DUMP / RESTORE / STATS,
  -- the refusal of a write command inside a no-writes function.

  local FN_NAME = "^[%w_]+$"

  function Mock:function_load(code, replace)
    self.libraries = self.libraries or {}
    local meta = code:match("^#!([^\n]*)")
    if not meta then return util.ERR("Missing library metadata") end
    local engine, rest = meta:match("^(%S+)%s*(.*)$")
    if engine ~= "lua" then return util.ERR("Engine '" .. tostring(engine) .. "' not found") end
    local name = rest:match("^name=(%S+)$")
    if not name then return util.ERR("Library name was not given") end
    if not name:match(FN_NAME) then
      return util.ERR("Library names can only contain letters, numbers, or underscores(_) and must be at "
        .. "least one character long")
    end
    if self.libraries[name] and not replace then
      return util.ERR("Library '" .. name .. "' already exists")
    end
    -- compiled without its metadata line (as Redis does), which keeps its newline: lines count alike
    local chunk, cerr = loadstring((code:gsub("^#![^\n]*", "", 1)), "@user_function")
    if not chunk then return util.ERR("Error compiling function: " .. cerr) end
    local fns = {}
    local function register_function(a, b)
      local spec = type(a) == "table" and a or { function_name = a, callback = b }
      local fname, cb = spec.function_name, spec.callback
      if type(fname) ~= "string" or not fname:match(FN_NAME) then
        error({ err = "ERR Function names can only contain letters, numbers, or underscores(_) and must be "
          .. "at least one character long" }, 0)
      end
      if type(cb) ~= "function" then error({ err = "ERR callback must be a function" }, 0) end
      if fns[fname] then error({ err = "ERR Function already exists in the library" }, 0) end
      local flags = {}
      for _, f in ipairs(spec.flags or {}) do flags[f] = true end
      fns[fname] = { callback = cb, flags = flags }
    end
    local run = { sources = { ["@user_function"] = true } }
    local env = setmetatable({ redis = { register_function = register_function } },
                             { __index = make_env(self, run, {}, {}, true) })
    setfenv(chunk, env)
    local ok, res = pcall(chunk)
    if not ok then
      local msg = type(res) == "table" and res.err or ("ERR Error registering functions: " .. tostring(res))
      return { err = one_line(msg) }
    end
    if next(fns) == nil then return util.ERR("No functions registered") end
    for fname in pairs(fns) do
      local owner = self.function_owner and self.function_owner[fname]
      if owner and owner ~= name then return util.ERR("Function " .. fname .. " already exists") end
    end
    self:function_delete(name)
    self.function_owner = self.function_owner or {}
    for fname, f in pairs(fns) do
      self.function_owner[fname] = name
      f.library = name
    end
    self.libraries[name] = { code = code, functions = fns }
    return name
  end

  function Mock:function_delete(name)
    local lib = self.libraries and self.libraries[name]
    if not lib then return false end
    for fname in pairs(lib.functions) do self.function_owner[fname] = nil end
    self.libraries[name] = nil
    return true
  end

  function Mock:fcall(fname, keys, args, ro)
    keys, args = string_list(keys, "keys"), string_list(args, "args")
    local lib = self.function_owner and self.function_owner[fname]
    local f = lib and self.libraries[lib].functions[fname]
    if not f then return util.ERR("Function not found") end
    if ro and not f.flags["no-writes"] then
      return util.ERR("Can not execute a script with write flag using *_ro command.")
    end
    if self.strict_keys and not same_slot(keys) then
      return util.err("CROSSSLOT Keys in request don't hash to the same slot")
    end
    local run = { sources = { ["@user_function"] = true } }
    self.rand = self.rand or srand48(0)
    setfenv(f.callback, make_env(self, run, keys, args, true))
    local old_hook, old_mask, old_count = debug.gethook()
    if self.line_hook then debug.sethook(line_hook(run), "l") end
    local ok, res = xpcall(function() return f.callback(keys, args) end, error_handler(run))
    debug.sethook(old_hook, old_mask, old_count)
    if not ok then return script_error(res, fname) end
    return from_lua(res)
  end

  local function fcall_command(ro)
    return function(m, argv)
      local keys, args = split_keys(argv)
      if not keys then return args end
      return m:fcall(argv[2], keys, args, ro)
    end
  end
  register("fcall", -3, fcall_command(false), nil, NOSCRIPT)
  register("fcall_ro", -3, fcall_command(true), nil, NOSCRIPT)

  register("function", -2, mock.subcommands("function", {
    load = { arity = -3, fn = function(m, argv)
      local replace = #argv == 4 and argv[3]:lower() == "replace"
      if #argv > 4 or (#argv == 4 and not replace) then return util.syntax() end
      return m:function_load(argv[#argv], replace)
    end },
    delete = { arity = 3, fn = function(m, argv)
      if not m:function_delete(argv[3]) then return util.ERR("Library not found") end
      return util.ok()
    end },
    flush = { arity = -2, fn = function(m)
      for name in pairs(m.libraries or {}) do m:function_delete(name) end
      return util.ok()
    end },
  }), nil, NOSCRIPT)

  for _, name in ipairs({ "subscribe", "psubscribe", "unsubscribe", "punsubscribe", "multi", "exec", "watch" }) do
    register(name, -1, function()
      return util.ERR("rlk-mock: " .. name:upper() .. " is not supported by the mock")
    end, nil, NOSCRIPT)
  end
end
