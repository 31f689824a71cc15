-- SPDX-License-Identifier: BSD-3-Clause
-- The real Redis backend: hiredis 0.14.1 (libhiredis.so.0.14) through
-- LuaJIT's FFI. LuaJIT only.
--
--   local real = require("support.real")
--   local r = real.new()            -- RLK_REDIS_SOCKET (unix path) or
--                                   -- 127.0.0.1:RLK_REDIS_PORT
--   r:command({ "SET", "k", "v" })  -- canonical reply (support.reply)
--   r:published()                   -- messages seen by a PSUBSCRIBE * connection
--
-- Two connections per server, shared by every backend of the process: one
-- for commands, one subscribed to every channel (PSUBSCRIBE *), so PUBLISH
-- counts one receiver, as the mock backend's subscriber does. published() sends PING on the subscriber connection and
-- reads until its pong: Redis delivers the messages published before the
-- PING first, so "everything published so far" is read without waiting.

if not jit then
  error("support.real needs LuaJIT (FFI on libhiredis); run busted --lua=luajit", 2)
end

local ffi = require("ffi")
local reply = require("support.reply")

local NIL = reply.NIL

local function declare()
  if pcall(ffi.typeof, "redisContext") then return end
  ffi.cdef([[
    typedef struct redisReader redisReader;

    typedef struct redisReply {
      int type;
      long long integer;
      size_t len;
      char *str;
      size_t elements;
      struct redisReply **element;
    } redisReply;

    enum redisConnectionType { REDIS_CONN_TCP, REDIS_CONN_UNIX };
  ]])
  if not pcall(ffi.typeof, "struct timeval") then
    ffi.cdef("struct timeval { long tv_sec; long tv_usec; };")
  end
  ffi.cdef([[
    typedef struct redisContext {
      int err;
      char errstr[128];
      int fd;
      int flags;
      char *obuf;
      redisReader *reader;
      enum redisConnectionType connection_type;
      struct timeval *timeout;
      struct { char *host; char *source_addr; int port; } tcp;
      struct { char *path; } unix_sock;
    } redisContext;

    redisContext *redisConnectWithTimeout(const char *ip, int port, const struct timeval tv);
    redisContext *redisConnectUnixWithTimeout(const char *path, const struct timeval tv);
    int redisSetTimeout(redisContext *c, const struct timeval tv);
    void redisFree(redisContext *c);
    void *redisCommandArgv(redisContext *c, int argc, const char **argv, const size_t *argvlen);
    int redisAppendCommandArgv(redisContext *c, int argc, const char **argv, const size_t *argvlen);
    int redisGetReply(redisContext *c, void **reply);
    void freeReplyObject(void *reply);
  ]])
end

declare()
local lib = ffi.load("libhiredis.so.0.14")

local REPLY_STRING, REPLY_ARRAY, REPLY_INTEGER = 1, 2, 3
local REPLY_NIL, REPLY_STATUS, REPLY_ERROR = 4, 5, 6

local CONNECT_TIMEOUT_S = 5
local COMMAND_TIMEOUT_S = 30

local real = {}

-- Canonical form of a hiredis reply.
local function convert(r)
  local t = r.type
  if t == REPLY_STRING then return ffi.string(r.str, r.len) end
  if t == REPLY_INTEGER then return tonumber(r.integer) end
  if t == REPLY_NIL then return NIL end
  if t == REPLY_STATUS then return { ok = ffi.string(r.str, r.len) } end
  if t == REPLY_ERROR then return { err = ffi.string(r.str, r.len) } end
  if t == REPLY_ARRAY then
    local out = {}
    for i = 0, tonumber(r.elements) - 1 do out[i + 1] = convert(r.element[i]) end
    return out
  end
  error("hiredis: unknown reply type " .. tostring(t))
end

local function take(ptr)
  local r = ffi.cast("redisReply *", ptr)
  local ok, v = pcall(convert, r)
  lib.freeReplyObject(ptr)
  if not ok then error(v, 2) end
  return v
end

-- One connection --------------------------------------------------------

local Conn = {}
Conn.__index = Conn

-- Where to connect: { socket = path } or { port = n }, from opts or the
-- environment (RLK_REDIS_SOCKET, RLK_REDIS_PORT). Nil when neither is set.
function real.target(opts)
  opts = opts or {}
  local socket = opts.socket or os.getenv("RLK_REDIS_SOCKET")
  if socket and socket ~= "" then return { socket = socket } end
  local port = opts.port or os.getenv("RLK_REDIS_PORT")
  if port and port ~= "" then
    local n = tonumber(port)
    if not n or n < 1 or n > 65535 or n ~= math.floor(n) then
      error("RLK_REDIS_PORT is not a port number: " .. tostring(port), 2)
    end
    return { port = n }
  end
  return nil
end

local function describe_target(t)
  return t.socket and ("unix:" .. t.socket) or ("127.0.0.1:" .. t.port)
end

function real.connect(target)
  local tv = ffi.new("struct timeval", { CONNECT_TIMEOUT_S, 0 })
  local ctx
  if target.socket then
    ctx = lib.redisConnectUnixWithTimeout(target.socket, tv)
  else
    ctx = lib.redisConnectWithTimeout("127.0.0.1", target.port, tv)
  end
  if ctx == nil then error("hiredis: out of memory while connecting", 2) end
  if ctx.err ~= 0 then
    local msg = ffi.string(ctx.errstr)
    lib.redisFree(ctx)
    error("cannot connect to Redis at " .. describe_target(target) .. ": " .. msg, 2)
  end
  ffi.gc(ctx, lib.redisFree)
  lib.redisSetTimeout(ctx, ffi.new("struct timeval", { COMMAND_TIMEOUT_S, 0 }))
  return setmetatable({ ctx = ctx, target = target }, Conn)
end

local function argv_arrays(argv)
  local n = #argv
  local ptrs = ffi.new("const char *[?]", n)
  local lens = ffi.new("size_t[?]", n)
  for i = 1, n do
    local s = argv[i]
    if type(s) ~= "string" then error("command arguments must be strings", 3) end
    ptrs[i - 1] = s
    lens[i - 1] = #s
  end
  return n, ptrs, lens
end

function Conn:io_error(what)
  return "Redis connection (" .. describe_target(self.target) .. ") " .. what .. ": "
    .. ffi.string(self.ctx.errstr)
end

-- Sends one command and reads its reply (canonical form).
function Conn:command(argv)
  local n, ptrs, lens = argv_arrays(argv)
  local r = lib.redisCommandArgv(self.ctx, n, ptrs, lens)
  if r == nil then error(self:io_error("failed"), 2) end
  return take(r)
end

function Conn:append(argv)
  local n, ptrs, lens = argv_arrays(argv)
  if lib.redisAppendCommandArgv(self.ctx, n, ptrs, lens) ~= 0 then
    error(self:io_error("append failed"), 2)
  end
end

function Conn:read()
  local out = ffi.new("void *[1]")
  if lib.redisGetReply(self.ctx, out) ~= 0 or out[0] == nil then
    error(self:io_error("read failed"), 2)
  end
  return take(out[0])
end

function Conn:close()
  if self.ctx then
    lib.redisFree(ffi.gc(self.ctx, nil))
    self.ctx = nil
  end
end

-- The backend ------------------------------------------------------------
--
-- Backends for the same server in one process share one session (the
-- command and the subscriber connection): a second PSUBSCRIBE * connection
-- would make PUBLISH count 2, and spec files each make a backend. The
-- session closes when the last backend using it is closed. The table of
-- sessions lives in the Lua registry: busted reloads this module for every
-- spec file (it restores package.loaded), and the sessions must outlive that.

local REGISTRY_KEY = "rlk.spec.support.real.sessions"
local registry = debug.getregistry()
registry[REGISTRY_KEY] = registry[REGISTRY_KEY] or {}
local sessions = registry[REGISTRY_KEY]

-- A session holds raw hiredis contexts only; each load of this module wraps
-- them in its own Conn objects.
local function open_session(target)
  local key = describe_target(target)
  local s = sessions[key]
  if s then
    s.refs = s.refs + 1
    return s
  end
  local main, sub = real.connect(target), real.connect(target)
  local ack = sub:command({ "PSUBSCRIBE", "*" })
  if type(ack) ~= "table" or ack[1] ~= "psubscribe" then
    error("PSUBSCRIBE * failed: " .. reply.describe(ack), 3)
  end
  s = { key = key, refs = 1, target = target, main = main.ctx, sub = sub.ctx }
  sessions[key] = s
  return s
end

local function close_session(s)
  s.refs = s.refs - 1
  if s.refs > 0 then return end
  lib.redisFree(ffi.gc(s.main, nil))
  lib.redisFree(ffi.gc(s.sub, nil))
  sessions[s.key] = nil
end

local Real = {}
Real.__index = Real
real.Real = Real

function real.new(opts)
  local target = real.target(opts)
  if not target then
    error("the redis backend needs RLK_REDIS_SOCKET or RLK_REDIS_PORT", 2)
  end
  local s = open_session(target)
  return setmetatable({
    target = target,
    session = s,
    main = setmetatable({ ctx = s.main, target = target }, Conn),
    sub = setmetatable({ ctx = s.sub, target = target }, Conn),
  }, Real)
end

local function session_of(self)
  if not self.session then error("this Redis backend is closed", 3) end
  return self
end

function Real:command(argv)
  return session_of(self).main:command(argv)
end

-- Messages the subscriber connection received since the last call (by any
-- backend sharing the session).
function Real:published()
  local sub = session_of(self).sub
  sub:append({ "PING" })
  local out = {}
  while true do
    local msg = sub:read()
    if type(msg) ~= "table" then
      error("unexpected reply on the subscriber connection: " .. reply.describe(msg))
    end
    if msg[1] == "pong" then break end
    if msg[1] == "pmessage" then
      out[#out + 1] = { channel = msg[3], message = msg[4] }
    elseif msg[1] == "smessage" then
      out[#out + 1] = { channel = msg[2], message = msg[3], sharded = true }
    end
  end
  return out
end

-- SSUBSCRIBE channel on the subscriber connection (PSUBSCRIBE * does not receive SPUBLISH):
-- SPUBLISH on it then counts 1 and published() logs its messages, marked sharded.
function Real:ssubscribe(channel)
  local sub = session_of(self).sub
  sub:append({ "SSUBSCRIBE", channel })
  self.session.shard = self.session.shard or {}
  self.session.shard[channel] = true
  self:published()
end

-- SUNSUBSCRIBE every shard channel ssubscribe() added (reset: a fresh database has none).
function Real:sunsubscribe_all()
  local s = session_of(self).session
  local chans = {}
  for ch in pairs(s.shard or {}) do chans[#chans + 1] = ch end
  table.sort(chans)
  for _, ch in ipairs(chans) do self.sub:append({ "SUNSUBSCRIBE", ch }) end
  s.shard = {}
  self:published()
end

function Real:close()
  if self.session then
    close_session(self.session)
    self.session, self.main, self.sub = nil, nil, nil
  end
end

return real
