-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of the redis.call mock itself (spec/support): the canonical reply
-- form, exact 64-bit integers, SHA-1 and bit ops, the virtual clock and
-- lazy expiry, pub/sub, command edge cases, the script sandbox and the
-- Lua <-> RESP conversions. They run under LuaJIT and PUC Lua 5.1; the
-- conformance suite checks the same behaviour against a real server.
--
-- The last block exercises the backend interface with the backend chosen
-- by RLK_BACKEND, so it also runs against real Redis.

local mock = require("support.mock")
local reply = require("support.reply")
local int64 = require("support.int64")
local sha1hex = require("support.sha1")
local bit = require("support.bitop")
local util = require("support.mock_util")
local backend = require("support.backend")
local helpers = require("support.helpers")

local NIL = reply.NIL
local WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
local NOT_INT = "ERR value is not an integer or out of range"

local function err(msg) return { err = msg } end
local OK = { ok = "OK" }

-- The error text of a script error without its " script: <sha>, on ..." tail.
local function head(r)
  assert.is_table(r, "expected an error reply")
  assert.is_string(r.err, "expected an error reply, got " .. reply.describe(r))
  return (r.err:gsub(" script: %x+, on .*$", ""))
end

describe("support.reply", function()
  it("has one NIL sentinel that prints as NIL and cannot be modified", function()
    assert.equal(NIL, mock.NIL)
    assert.equal(NIL, backend.NIL)
    assert.equal("NIL", tostring(NIL))
    assert.has_error(function() NIL.x = 1 end)
  end)

  it("classifies replies", function()
    assert.is_true(reply.is_status({ ok = "OK" }))
    assert.is_true(reply.is_error({ err = "ERR x" }))
    assert.is_true(reply.is_array({ 1, NIL }))
    assert.is_false(reply.is_array(NIL))
    assert.is_false(reply.is_array({ ok = "x" }))
  end)

  it("describes nested replies on one line", function()
    assert.equal('[1, "a", NIL, {ok="OK"}, {err="E x"}, [2]]',
      reply.describe({ 1, "a", NIL, { ok = "OK" }, { err = "E x" }, { 2 } }))
  end)

  it("compares errors by first word unless told otherwise", function()
    assert.is_true(reply.same(err("ERR a"), err("ERR b")))
    assert.is_false(reply.same(err("ERR a"), err("WRONGTYPE a")))
    assert.is_true(reply.same(err("ERR abc"), err("ERR abd"), { err_prefix = "ERR ab" }))
    assert.is_false(reply.same(err("ERR abc"), err("ERR axd"), { err_prefix = "ERR ab" }))
  end)

  it("compares numbers with a tolerance and arrays element by element", function()
    assert.is_true(reply.same({ 1, 100 }, { 1, 98 }, { tolerance = 2 }))
    local ok, why = reply.same({ 1, 100 }, { 1, 97 }, { tolerance = 2 })
    assert.is_false(ok)
    assert.matches("reply%[2%]", why)
    assert.is_false(reply.same({ 1 }, { 1, 2 }))
    assert.is_false(reply.same(NIL, false))
    assert.is_false(reply.same("1", 1))
  end)

  it("sorts arrays and key/value pairs for unordered replies", function()
    assert.same({ "a", "b", "c" }, reply.sorted({ "c", "a", "b" }))
    assert.same({ "a", "1", "b", "2" }, reply.sorted_pairs({ "b", "2", "a", "1" }))
  end)
end)

describe("support.int64", function()
  it("parses like Redis's string2ll", function()
    assert.equal("0", int64.parse("0"))
    assert.equal("-12", int64.parse("-12"))
    assert.equal("9223372036854775807", int64.parse("9223372036854775807"))
    assert.equal("-9223372036854775808", int64.parse("-9223372036854775808"))
    for _, bad in ipairs({ "", "-0", "01", "+1", " 1", "1 ", "1.0", "1e3", "0x10",
      "9223372036854775808", "-9223372036854775809", "abc", "-" }) do
      assert.is_nil(int64.parse(bad), bad)
    end
  end)

  it("adds exactly near the limits", function()
    assert.equal("9223372036854775807", int64.add("9223372036854775806", "1"))
    assert.equal("9223372036854775808", int64.add("9223372036854775807", "1"))
    assert.is_false(int64.in_range(int64.add("9223372036854775807", "1")))
    assert.is_true(int64.in_range(int64.add("-9223372036854775807", "-1")))
    assert.equal("0", int64.add("-5", "5"))
    assert.equal("-3", int64.add("5", "-8"))
    assert.equal("-9223372036854775808", int64.sub("0", "9223372036854775808"))
  end)

  it("compares, negates and multiplies", function()
    assert.equal(-1, int64.cmp("-2", "1"))
    assert.equal(1, int64.cmp("10", "9"))
    assert.equal(-1, int64.cmp("-10", "-9"))
    assert.equal(0, int64.cmp("7", "7"))
    assert.equal("7", int64.neg("-7"))
    assert.equal("-9223372036854775000", int64.mul_small("-9223372036854775", 1000))
    assert.equal("1700000000000", int64.from_number(1.7e12))
    assert.equal("0", int64.from_number(-0.0))
  end)
end)

describe("support.sha1 and support.bitop", function()
  it("computes SHA-1", function()
    assert.equal("da39a3ee5e6b4b0d3255bfef95601890afd80709", sha1hex(""))
    assert.equal("a9993e364706816aba3e25717850c26c9cd0d89d", sha1hex("abc"))
    assert.equal("84983e441c3bd26ebaae4aa1f95129e5e54670f1",
      sha1hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))
    assert.equal("291e9a6c66994949b57ba5e650361e98fc36b1ba", sha1hex(string.rep("a", 1000)))
    assert.equal("cef734ba81a024479e09eb5a75b6ddae62e6abf1", sha1hex(string.rep("x", 55)))
    assert.equal("901305367c259952f4e7af8323f480d59f81335b", sha1hex(string.rep("x", 56)))
  end)

  it("gives LuaBitOp's 32-bit signed results", function()
    assert.equal(15, bit.band(0xff, 0x0f))
    assert.equal(7, bit.bor(1, 2, 4))
    assert.equal(6, bit.bxor(5, 3))
    assert.equal(-2147483648, bit.lshift(1, 31))
    assert.equal(15, bit.rshift(-1, 28))
    assert.equal(-16, bit.arshift(-256, 4))
    assert.equal(3, bit.rol(0x80000001, 1))
    assert.equal(-2147483648, bit.ror(1, 1))
    assert.equal(0x78563412, bit.bswap(0x12345678))
    assert.equal(-1, bit.bnot(0))
    assert.equal(5, bit.tobit(2 ^ 32 + 5))
    assert.equal("ffffffff", bit.tohex(-1))
    assert.equal("00FF", bit.tohex(255, -4))
    assert.equal(2, bit.lshift(1, 33))
  end)
end)

describe("mock_util", function()
  it("matches glob patterns like Redis", function()
    assert.is_true(util.glob_match("*", ""))
    assert.is_true(util.glob_match("lock:*", "lock:a"))
    assert.is_false(util.glob_match("lock:?", "lock:ab"))
    assert.is_true(util.glob_match("[a-c]x", "bx"))
    assert.is_false(util.glob_match("[^a-c]x", "bx"))
    assert.is_true(util.glob_match("a\\*", "a*"))
    assert.is_false(util.glob_match("a\\*", "ab"))
    assert.is_true(util.glob_match("redisson_lock__channel:{*}", "redisson_lock__channel:{l}"))
    assert.is_true(util.glob_match("*a*b*", "xxaxxbxx"))
  end)

  it("parses doubles as Redis does", function()
    assert.equal(1.5, util.parse_double("1.5"))
    assert.equal(math.huge, util.parse_double("+inf"))
    assert.equal(-math.huge, util.parse_double("-Infinity"))
    assert.equal(16, util.parse_double("0x10"))
    assert.equal(0.5, util.parse_double(".5"))
    for _, bad in ipairs({ "", " 1", "1 ", "nan", "1e400", "1e-400", "x", "1e", "." }) do
      assert.is_nil(util.parse_double(bad), bad)
    end
    assert.same({ 2, true }, { util.parse_range_bound("(2") })
    assert.same({ 0, false }, { util.parse_range_bound("") })
    assert.is_nil(util.parse_range_bound("nan"))
  end)

  it("formats doubles as RESP2 replies", function()
    assert.equal("0.10000000000000001", util.format_double(0.1))
    assert.equal("3", util.format_double(3))
    assert.equal("inf", util.format_double(math.huge))
    assert.equal("-inf", util.format_double(-math.huge))
  end)

  it("computes cluster hash slots with hash tags", function()
    assert.equal(12739, util.key_slot("123456789"))
    assert.equal(util.key_slot("{lock}"), util.key_slot("redisson_lock__channel:{lock}"))
    assert.equal(util.key_slot("lock"), util.key_slot("{lock}:uuid:rwlock_timeout:1"))
    assert.equal(0x31C3, util.crc16("123456789"))
  end)
end)

describe("the mock's virtual clock and expiry", function()
  local m
  before_each(function() m = mock.new({ now_ms = 1000000 }) end)

  it("starts at the given time and only moves on advance()", function()
    assert.equal(1000000, m:now())
    m:call("SET", "k", "v")
    assert.equal(1000000, m:now())
    assert.equal(1000250, m:advance(250))
    assert.has_error(function() m:advance(-1) end)
    assert.has_error(function() m:advance("10") end)
  end)

  it("starts at a fixed default time", function()
    assert.equal(mock.DEFAULT_NOW_MS, mock.new():now())
  end)

  it("keeps a key up to and including its expire time", function()
    m:call("SET", "k", "v", "PX", 100)
    assert.equal(100, m:call("PTTL", "k"))
    m:advance(99)
    assert.equal(1, m:call("PTTL", "k"))
    m:advance(1)
    assert.equal(0, m:call("PTTL", "k"))
    assert.equal("v", m:call("GET", "k"))
    m:advance(1)
    assert.equal(NIL, m:call("GET", "k"))
    assert.equal(-2, m:call("PTTL", "k"))
    assert.equal(0, m:call("EXISTS", "k"))
  end)

  it("deletes at once on PEXPIRE with a time not in the future", function()
    for _, ms in ipairs({ "0", "-1", "-100000" }) do
      m:call("HSET", "h", "f", "v")
      assert.equal(1, m:call("PEXPIRE", "h", ms))
      assert.equal(0, m:call("EXISTS", "h"))
    end
    m:call("SET", "k", "v")
    assert.equal(1, m:call("PEXPIREAT", "k", m:now()))
    assert.equal(NIL, m:call("GET", "k"))
  end)

  it("expires every type and hides expired keys from every command", function()
    m:call("SET", "s", "v", "PX", 10)
    m:call("HSET", "h", "f", "v")
    m:call("PEXPIRE", "h", 10)
    m:call("RPUSH", "l", "a")
    m:call("PEXPIRE", "l", 10)
    m:call("SADD", "t", "a")
    m:call("PEXPIRE", "t", 10)
    m:call("ZADD", "z", 1, "a")
    m:call("PEXPIRE", "z", 10)
    m:call("SET", "keep", "v")
    assert.equal(6, m:call("DBSIZE"))
    m:advance(11)
    assert.equal(1, m:call("DBSIZE"))
    assert.same({ "keep" }, m:call("KEYS", "*"))
    assert.same({ ok = "none" }, m:call("TYPE", "h"))
    assert.same({}, m:call("HGETALL", "h"))
    assert.equal(0, m:call("LLEN", "l"))
    assert.equal(0, m:call("SCARD", "t"))
    assert.equal(NIL, m:call("ZSCORE", "z", "a"))
    assert.equal(1, m:call("INCR", "s"))
    assert.equal(-1, m:call("PTTL", "s"))
  end)

  it("rounds TTL to the nearest second", function()
    m:call("SET", "k", "v", "PX", 1500)
    assert.equal(2, m:call("TTL", "k"))
    m:advance(1)
    assert.equal(1, m:call("TTL", "k"))
  end)

  it("keeps the ttl on INCR, HSET, HINCRBY, RPUSH and SET KEEPTTL, clears it on SET", function()
    m:call("SET", "n", "1", "PX", 5000)
    m:call("INCR", "n")
    m:call("HSET", "h", "f", "1")
    m:call("PEXPIRE", "h", 5000)
    m:call("HSET", "h", "g", "2")
    m:call("HINCRBY", "h", "f", 1)
    m:call("RPUSH", "l", "a")
    m:call("PEXPIRE", "l", 5000)
    m:call("RPUSH", "l", "b")
    m:call("SET", "s", "a", "PX", 5000)
    m:call("SET", "s", "b", "KEEPTTL")
    m:call("SET", "c", "a", "PX", 5000)
    m:call("SET", "c", "b")
    assert.same({ 5000, 5000, 5000, 5000, -1 },
      { m:call("PTTL", "n"), m:call("PTTL", "h"), m:call("PTTL", "l"), m:call("PTTL", "s"), m:call("PTTL", "c") })
  end)

  it("applies PEXPIRE NX XX GT LT against the current ttl", function()
    m:call("SET", "k", "v")
    assert.equal(0, m:call("PEXPIRE", "k", 100, "XX"))
    assert.equal(0, m:call("PEXPIRE", "k", 100, "GT"))
    assert.equal(1, m:call("PEXPIRE", "k", 100, "NX"))
    assert.equal(0, m:call("PEXPIRE", "k", 200, "NX"))
    assert.equal(0, m:call("PEXPIRE", "k", 50, "GT"))
    assert.equal(1, m:call("PEXPIRE", "k", 300, "GT"))
    assert.equal(0, m:call("PEXPIRE", "k", 400, "LT"))
    assert.equal(1, m:call("PEXPIRE", "k", 250, "LT"))
    assert.equal(250, m:call("PTTL", "k"))
  end)

  it("handles EXPIREAT, PEXPIRETIME, EXPIRETIME and PERSIST on the virtual clock", function()
    m:call("SET", "k", "v")
    assert.equal(1, m:call("PEXPIREAT", "k", m:now() + 2500))
    assert.equal(m:now() + 2500, m:call("PEXPIRETIME", "k"))
    assert.equal(1003, m:call("EXPIRETIME", "k"))
    assert.equal(1, m:call("EXPIREAT", "k", 2000))
    assert.equal(1000000, m:call("PTTL", "k"))
    assert.equal(1, m:call("PERSIST", "k"))
    assert.equal(-1, m:call("PTTL", "k"))
    assert.equal(0, m:call("PERSIST", "k"))
  end)

  it("rejects expire times that overflow", function()
    m:call("SET", "k", "v")
    assert.same(err("ERR invalid expire time in 'pexpire' command"),
      m:call("PEXPIRE", "k", "9223372036854775807"))
    assert.same(err("ERR invalid expire time in 'expire' command"),
      m:call("EXPIRE", "k", "9223372036854775807"))
    assert.same(err("ERR invalid expire time in 'set' command"), m:call("SET", "k", "v", "EX", "0"))
    assert.same(err(NOT_INT), m:call("PEXPIRE", "k", "1.5"))
    assert.equal(-1, m:call("PTTL", "k"))
  end)

  it("answers TIME from the virtual clock", function()
    local c = mock.new({ now_ms = 1700000000123 })
    assert.same({ "1700000000", "123000" }, c:call("TIME"))
    c:advance(1877)
    assert.same({ "1700000002", "0" }, c:call("TIME"))
    assert.same({ "1700000002", "0" }, c:eval("return redis.call('TIME')"))
  end)

  it("expires keys seen by scripts", function()
    m:call("SET", "k", "v", "PX", 10)
    m:advance(11)
    assert.equal(0, m:eval("return redis.call('EXISTS', KEYS[1])", { "k" }))
  end)
end)

describe("the mock's pub/sub", function()
  it("counts subscribers and logs every message in order", function()
    local m = mock.new()
    assert.equal(0, m:call("PUBLISH", "a", "1"))
    m:subscribe("a")
    m:psubscribe("a*")
    m:psubscribe("*")
    assert.equal(3, m:call("PUBLISH", "a", "2"))
    assert.equal(2, m:call("PUBLISH", "ab", "3"))
    assert.equal(1, m:call("PUBLISH", "b", "4"))
    m:punsubscribe("*")
    assert.equal(0, m:call("PUBLISH", "b", "5"))
    assert.same({ { channel = "a", message = "1" }, { channel = "a", message = "2" },
      { channel = "ab", message = "3" }, { channel = "b", message = "4" }, { channel = "b", message = "5" } },
      m:published())
    assert.same({}, m:published())
    m:eval("return redis.call('PUBLISH', KEYS[1], ARGV[1])", { "redisson_lock__channel:{l}" }, { "0" })
    assert.same({ { channel = "redisson_lock__channel:{l}", message = "0" } }, m:published())
  end)
end)

describe("the mock's commands", function()
  local m
  before_each(function() m = mock.new() end)

  it("replies the exact Redis errors for unknown commands and arity", function()
    assert.same(err("ERR unknown command 'foo', with args beginning with: 'a' 'b' "), m:call("foo", "a", "b"))
    assert.same(err("ERR wrong number of arguments for 'get' command"), m:call("GET"))
    assert.same(err("ERR wrong number of arguments for 'hset' command"), m:call("HSET", "h", "f"))
    assert.same(err("ERR wrong number of arguments for 'hset' command"), m:call("HSET", "h", "f", "v", "g"))
    assert.same(err("ERR wrong number of arguments for 'script|load' command"), m:call("SCRIPT", "LOAD"))
    assert.same(OK, m:call("set", "k", "v"))
    assert.equal("v", m:call("gEt", "k"))
  end)

  it("replies WRONGTYPE for every type mismatch", function()
    m:call("SET", "s", "v")
    m:call("HSET", "h", "f", "v")
    for _, argv in ipairs({ { "HGET", "s", "f" }, { "LPUSH", "s", "a" }, { "SADD", "s", "a" },
      { "ZADD", "s", 1, "a" }, { "GET", "h" }, { "INCR", "h" }, { "APPEND", "h", "x" },
      { "SET", "h", "v", "GET" }, { "HINCRBY", "s", "f", 1 }, { "LRANGE", "s", 0, -1 } }) do
      assert.same(err(WRONGTYPE), m:call(unpack(argv)), table.concat(argv, " "))
    end
  end)

  it("implements SET's options", function()
    assert.equal(NIL, m:call("SET", "k", "v", "XX"))
    assert.same(OK, m:call("SET", "k", "v", "NX"))
    assert.equal(NIL, m:call("SET", "k", "w", "NX"))
    assert.equal("v", m:call("SET", "k", "w", "GET"))
    assert.equal("w", m:call("SET", "k", "x", "NX", "GET"))
    assert.equal("w", m:call("GET", "k"))
    assert.same(err("ERR syntax error"), m:call("SET", "k", "v", "NX", "XX"))
    assert.same(err("ERR syntax error"), m:call("SET", "k", "v", "PX"))
    assert.same(OK, m:call("SET", "k", "v", "px", 10, "px", 20))
    assert.equal(20, m:call("PTTL", "k"))
    assert.same(OK, m:call("SET", "k", "v", "PXAT", m:now() + 5))
    assert.equal(5, m:call("PTTL", "k"))
    assert.same(OK, m:call("SET", "k", "v", "EXAT", 1))
    assert.equal(0, m:call("EXISTS", "k"))
  end)

  it("counts exactly with 64-bit integers", function()
    m:call("SET", "k", "9223372036854775806")
    assert.equal(9223372036854775807, m:call("INCR", "k"))
    assert.equal("9223372036854775807", m:call("GET", "k"))
    assert.same(err("ERR increment or decrement would overflow"), m:call("INCR", "k"))
    assert.same(err("ERR decrement would overflow"), m:call("DECRBY", "x", "-9223372036854775808"))
    assert.same(err(NOT_INT), m:call("INCRBY", "x", "1.0"))
    m:call("SET", "n", "01")
    assert.same(err(NOT_INT), m:call("INCR", "n"))
    assert.same(err("ERR hash value is not an integer"),
      (function() m:call("HSET", "h", "f", "x") return m:call("HINCRBY", "h", "f", 1) end)())
  end)

  it("keeps hash fields in insertion order and removes empty hashes", function()
    assert.equal(3, m:call("HSET", "h", "z", 1, "a", 2, "m", 3))
    assert.equal(0, m:call("HSET", "h", "z", 9))
    assert.same({ "z", "9", "a", "2", "m", "3" }, m:call("HGETALL", "h"))
    assert.equal(3, m:call("HDEL", "h", "z", "a", "m", "q"))
    assert.equal(0, m:call("EXISTS", "h"))
    assert.same({ NIL, NIL }, m:call("HMGET", "h", "a", "b"))
  end)

  it("implements list edge cases", function()
    m:call("RPUSH", "l", "a", "b", "c")
    assert.same({ "a", "b" }, m:call("LPOP", "l", 2))
    assert.same({}, m:call("LPOP", "l", 0))
    assert.same(err("ERR value is out of range, must be positive"), m:call("LPOP", "l", -1))
    assert.equal("c", m:call("RPOP", "l"))
    assert.equal(0, m:call("EXISTS", "l"))
    assert.equal(NIL, m:call("LPOP", "l", 1))
    assert.same(err("ERR no such key"), m:call("LSET", "l", 0, "x"))
    m:call("RPUSH", "l", "x")
    assert.same(err("ERR index out of range"), m:call("LSET", "l", 3, "y"))
    assert.equal(NIL, m:call("LINDEX", "missing", "not-a-number"))
  end)

  it("lists an all-integer set in numeric order", function()
    m:call("SADD", "s", 10, -3, 2)
    assert.same({ "-3", "2", "10" }, m:call("SMEMBERS", "s"))
    m:call("SADD", "s", "x")
    assert.equal(4, #m:call("SMEMBERS", "s"))
  end)

  it("orders sorted sets by score then member and formats scores", function()
    m:call("ZADD", "z", 1, "b", 1, "a", "0.1", "c", "-0", "d")
    assert.same({ "d", "0", "c", "0.10000000000000001", "a", "1", "b", "1" },
      m:call("ZRANGE", "z", 0, -1, "WITHSCORES"))
    assert.same({ "a", "b" }, m:call("ZRANGEBYSCORE", "z", "(0.1", "+inf"))
    assert.equal(2, m:call("ZREMRANGEBYSCORE", "z", "-inf", "0.5"))
    assert.equal("2.5", m:call("ZINCRBY", "z", "1.5", "a"))
    assert.same(err("ERR min or max is not a float"), m:call("ZCOUNT", "z", "x", "1"))
    assert.same(err("ERR value is not a valid float"), m:call("ZADD", "z", "nan", "q"))
  end)

  it("stores what it is given, byte for byte", function()
    local bytes = "a\0b\r\n\255"
    m:call("SET", "k\0", bytes)
    assert.equal(bytes, m:call("GET", "k\0"))
    assert.equal(6, m:call("STRLEN", "k\0"))
  end)
end)

describe("the mock's script sandbox", function()
  local m
  before_each(function() m = mock.new() end)

  it("exposes the globals Redis 7.0 keeps and not the others", function()
    local names = { "assert", "collectgarbage", "error", "gcinfo", "getmetatable", "ipairs", "load",
      "loadstring", "next", "pairs", "pcall", "rawequal", "rawget", "rawset", "select", "setmetatable",
      "tonumber", "tostring", "type", "unpack", "xpcall", "string", "table", "math", "coroutine", "bit",
      "redis", "KEYS", "ARGV", "_G", "_VERSION" }
    for _, name in ipairs(names) do
      assert.equal(1, m:eval("return rawget(_G, ARGV[1]) ~= nil", {}, { name }), name)
    end
    for _, name in ipairs({ "os", "io", "print", "require", "dofile", "loadfile", "setfenv", "getfenv",
      "module", "newproxy", "debug", "package", "jit", "arg" }) do
      assert.equal("ERR user_script:1: Script attempted to access nonexistent global variable '"
        .. name .. "'", head(m:eval("return " .. name)), name)
    end
  end)

  it("makes the globals and the libraries read-only", function()
    assert.equal("ERR user_script:1: Attempt to modify a readonly table", head(m:eval("x = 1")))
    assert.equal("ERR user_script:2: Attempt to modify a readonly table",
      head(m:eval("local function f()\n  y = 1\nend\nf()")))
    assert.equal("ERR user_script:1: Attempt to modify a readonly table", head(m:eval("string.x = 1")))
    assert.equal("ERR user_script:1: Attempt to modify a readonly table", head(m:eval("redis.call = 1")))
    assert.equal("ERR Attempt to modify a readonly table", head(m:eval("rawset(_G, 'y', 1)")))
    assert.equal("ERR Attempt to modify a readonly table", head(m:eval("setmetatable(_G, {})")))
    assert.equal(NIL, m:eval("return rawget(_G, 'nope')"))
    assert.equal("x", m:eval("KEYS[1] = 'x' return KEYS[1]", { "k" }))
  end)

  it("runs loadstring'd code in the sandbox", function()
    assert.equal(2, m:eval("return loadstring('return 1 + 1')()"))
    assert.equal('ERR [string "zz = 1"]:1: Attempt to modify a readonly table',
      head(m:eval("return loadstring('zz = 1')()")))
    assert.matches("on zz = 1:1%.$", m:eval("return loadstring('zz = 1')()").err)
  end)

  it("converts script return values as Redis does", function()
    assert.equal(3, m:eval("return 3.7"))
    assert.equal(-3, m:eval("return -3.7"))
    assert.equal(0, m:eval("return -0.5"))
    assert.equal(-2 ^ 63, m:eval("return 1e30"))
    assert.equal(-2 ^ 63, m:eval("return 0/0"))
    assert.equal(1, m:eval("return true"))
    assert.equal(NIL, m:eval("return false"))
    assert.equal(NIL, m:eval("return nil"))
    assert.equal(NIL, m:eval("local x = 1"))
    assert.same({ 1, 2, { 3 } }, m:eval("return {1, 2, {3, nil, 4}, nil, 5}"))
    assert.same({ 1, "two", 3, 1, NIL, "after" }, m:eval("return {1, 'two', 3.9, true, false, 'after'}"))
    assert.same({}, m:eval("return {a = 1}"))
    assert.same({ ok = "FINE" }, m:eval("return {ok = 'FINE'}"))
    assert.same({ ok = "a  b" }, m:eval("return {ok = 'a\\r\\nb'}"))
    assert.same(err("boom"), m:eval("return {err = 'boom'}"))
    assert.same({}, m:eval("return {err = 1}"))
    assert.same({ ok = "x" }, m:eval("return {err = 1, ok = 'x'}"))
    assert.same({ 1, { ok = "S" }, err("E q"), 1, NIL }, m:eval("return {1, {ok = 'S'}, {err = 'E q'}, true, false}"))
    assert.equal("3.5", m:eval("return {double = 3.5}"))
  end)

  it("converts command replies to Lua values as Redis does", function()
    m:call("HSET", "h", "b", "B")
    assert.same({ "boolean", "number", "table", "OK", "table", "boolean", "B" },
      m:eval([[
        local missing = redis.call('GET', 'nothing')
        local n = redis.call('INCR', 'n')
        local s = redis.call('SET', 'k', 'v')
        local t = redis.call('HMGET', 'h', 'a', 'b')
        return {type(missing), type(n), type(s), s.ok, type(t), type(t[1]), t[2]}
      ]]))
    assert.equal("0.10000000000000001", m:eval("redis.call('SET', 'f', 0.1) return redis.call('GET', 'f')"))
    assert.equal("1e+20", m:eval("redis.call('SET', 'f', 1e20) return redis.call('GET', 'f')"))
    assert.equal("3", m:eval("redis.call('SET', 'f', 3) return redis.call('GET', 'f')"))
  end)

  it("raises command errors from redis.call and returns them from redis.pcall", function()
    m:call("SET", "s", "v")
    local raised = m:eval("return redis.call('HGET', KEYS[1], 'f')", { "s" })
    assert.equal(WRONGTYPE, head(raised))
    assert.equal(WRONGTYPE .. " script: " .. sha1hex("return redis.call('HGET', KEYS[1], 'f')")
      .. ", on @user_script:1.", raised.err)
    assert.same(err(WRONGTYPE), m:eval("return redis.pcall('HGET', KEYS[1], 'f')", { "s" }))
    assert.same({ "table", WRONGTYPE }, m:eval("local e = redis.pcall('HGET', 's', 'f') return {type(e), e.err}"))
    assert.same({ "false", "string", WRONGTYPE },
      m:eval("local ok, e = pcall(redis.call, 'HGET', 's', 'f') return {tostring(ok), type(e), e}"))
    assert.same(err("ERR Unknown Redis command called from script"), m:eval("return redis.pcall('nosuch')"))
    assert.same(err("ERR Wrong number of args calling Redis command from script"),
      m:eval("return redis.pcall('GET')"))
    assert.same(err("ERR Lua redis lib command arguments must be strings or integers"),
      m:eval("return redis.pcall('SET', 'k', true)"))
    assert.same(err("ERR Please specify at least one argument for this redis lib call"),
      m:eval("return redis.pcall()"))
    assert.same(err("ERR This Redis command is not allowed from script"),
      m:eval("return redis.pcall('EVAL', 'return 1', 0)"))
  end)

  it("reports the script line of an error, also through tail calls", function()
    m:call("SET", "s", "v")
    assert.matches("on @user_script:3%.$", m:eval("\n\nreturn redis.call('HGET', 's', 'f')").err)
    assert.matches("on @user_script:2%.$",
      m:eval("local function f()\n  local n = redis.call('INCR', 's')\n  return n\nend\nreturn f() + 1").err)
    assert.equal("ERR user_script:4: boom", head(m:eval("local a = 1\nlocal b = 2\n\nerror('boom')")))
    assert.equal("ERR plain", head(m:eval("error('plain', 0)")))
    assert.equal("FOO boom", head(m:eval("error({err = 'FOO boom'})")))
  end)

  it("reports compile errors", function()
    assert.matches("^ERR Error compiling script %(new function%): user_script:1: ", m:eval("return +").err)
  end)

  it("implements redis.error_reply and redis.status_reply", function()
    assert.same(err("RLK_BADLEASE lease must be positive"),
      m:eval("return redis.error_reply('RLK_BADLEASE lease must be positive')"))
    assert.same(err("ERR boom"), m:eval("return redis.error_reply('boom')"))
    assert.same(err("ERR boom"), m:eval("return redis.error_reply('-boom')"))
    assert.same(err("ERR wrong number or type of arguments"), m:eval("return redis.error_reply(1)"))
    assert.same({ ok = "PONG" }, m:eval("return redis.status_reply('PONG')"))
    assert.same(err("ERR wrong number or type of arguments"), m:eval("return redis.status_reply()"))
  end)

  it("implements redis.sha1hex and redis.log", function()
    assert.equal(sha1hex("abc"), m:eval("return redis.sha1hex('abc')"))
    assert.equal(sha1hex("1"), m:eval("return redis.sha1hex(1)"))
    assert.equal("ERR wrong number of arguments", head(m:eval("return redis.sha1hex()")))
    assert.equal(NIL, m:eval("return redis.log(redis.LOG_WARNING, 'lock', 'lost', 3)"))
    assert.same({ { level = 3, message = "lock lost 3" } }, m.logs)
    assert.equal("ERR Invalid debug level.", head(m:eval("redis.log(4, 'x')")))
    assert.equal("ERR redis.log() requires two arguments or more.", head(m:eval("redis.log(1)")))
  end)

  it("implements Redis's math.random generator", function()
    assert.same({ "0.74452500033403", 342702 },
      m:eval("math.randomseed(42) return {tostring(math.random()), math.random(1000000)}"))
    local a = m:eval("return tostring(math.random())")
    local b = m:eval("return tostring(math.random())")
    assert.are_not.equal(a, b)
  end)

  it("implements EVAL, EVALSHA and SCRIPT through commands", function()
    local src = "return {KEYS[1], ARGV[1]}"
    assert.same({ "k", "a" }, m:call("EVAL", src, 1, "k", "a"))
    assert.same({ "k", "b" }, m:call("EVALSHA", sha1hex(src), 1, "k", "b"))
    assert.same(err("NOSCRIPT No matching script. Please use EVAL."), m:call("EVALSHA", sha1hex("x"), 0))
    assert.equal(sha1hex("return 7"), m:call("SCRIPT", "LOAD", "return 7"))
    assert.equal(7, m:evalsha(sha1hex("return 7"):upper()))
    assert.same({ 1, 0 }, m:call("SCRIPT", "EXISTS", sha1hex("return 7"), sha1hex("nope")))
    assert.same(OK, m:call("SCRIPT", "FLUSH"))
    assert.same({ 0 }, m:call("SCRIPT", "EXISTS", sha1hex("return 7")))
    assert.same(err("ERR Number of keys can't be negative"), m:call("EVAL", "return 1", -1))
    assert.same(err("ERR Number of keys can't be greater than number of args"), m:call("EVAL", "return 1", 2, "a"))
  end)

  it("can check that scripts only touch their KEYS (strict_keys)", function()
    local strict = mock.new({ strict_keys = true })
    assert.same(OK, strict:eval("return redis.call('SET', KEYS[1], 'v')", { "a" }))
    local r = strict:eval("return redis.call('SET', 'other', 'v')", { "a" })
    assert.matches("^ERR rlk%-mock: script accessed key 'other'", r.err)
    assert.same(OK, strict:eval("return redis.call('MSET', KEYS[1], 'x', KEYS[2], 'y')", { "{a}", "{a}:b" }))
    assert.same(err("CROSSSLOT Keys in request don't hash to the same slot"),
      strict:eval("return 1", { "a", "b" }))
    assert.equal(1, strict:eval("return redis.call('PUBLISH', 'any-channel', 'm')", {}) + 1)
    assert.same(OK, m:eval("return redis.call('SET', 'other', 'v')", { "a" }))
  end)
end)

describe("support.backend (" .. backend.default_name() .. ")", function()
  local r
  setup(function() r = backend.new() end)
  teardown(function() r:close() end)
  before_each(function() r:reset() end)

  it("names itself and says whether it has a virtual clock", function()
    assert.equal(backend.default_name(), r.name)
    assert.equal(r.name == "mock", r.virtual_time)
    assert.equal(r.name == "mock", helpers.virtual_time())
  end)

  it("answers commands in canonical form, numbers sent as decimals", function()
    assert.same(OK, r:call("SET", "k", 12))
    assert.equal("12", r:call("GET", "k"))
    assert.equal(NIL, r:call("GET", "missing"))
    assert.same({ "12", NIL }, r:call("MGET", "k", "missing"))
    assert.same(err(WRONGTYPE), r:call("HGET", "k", "f"))
    assert.same(OK, r:command({ "SET", "k2", "v" }))
    assert.has_error(function() r:call("SET", "k", {}) end)
  end)

  it("evaluates literal scripts with KEYS and ARGV", function()
    assert.same({ "a", "1" }, r:eval("return {KEYS[1], ARGV[1]}", { "a" }, { 1 }))
    assert.same(err("RLK_BADARG bad"), r:eval("return redis.error_reply('RLK_BADARG bad')", {}, {}))
    assert.equal(NIL, r:eval("return nil"))
  end)

  it("finds scripts under scripts/<kind>/<op>.lua and refuses odd names", function()
    assert.equal(backend.root .. "/scripts/reentrant/acquire.lua", backend.script_path("reentrant/acquire"))
    for _, bad in ipairs({ "../x", "a//b", "/abs", "", "a/", "a b" }) do
      assert.has_error(function() backend.script_path(bad) end)
    end
    assert.has_error(function() r:script("no_such_kind/no_such_script", {}, {}) end)
  end)

  it("empties the database on reset", function()
    r:call("SET", "k", "v")
    r:reset()
    assert.equal(0, r:call("DBSIZE"))
  end)

  it("logs what is published, once, in order, and counts its own subscriber", function()
    assert.equal(1, r:call("PUBLISH", "redisson_lock__channel:{l}", "0"))
    assert.equal(1, r:eval("return redis.call('PUBLISH', KEYS[1], ARGV[1])", { "c" }, { "1" }))
    assert.same({ { channel = "redisson_lock__channel:{l}", message = "0" }, { channel = "c", message = "1" } },
      r:published())
    assert.same({}, r:published())
    r:call("PUBLISH", "x", "y")
    r:reset()
    assert.same({}, r:published())
  end)

  it("reads the server clock", function()
    local t = r:time_ms()
    assert.is_number(t)
    assert.is_true(t > 1600000000000)
  end)

  helpers.it_virtual("moves the clock forward and expires keys", function()
    r:call("SET", "k", "v", "PX", 1000)
    r:advance(1000)
    assert.equal("v", r:call("GET", "k"))
    r:advance(1)
    assert.equal(NIL, r:call("GET", "k"))
  end)

  if backend.default_name() ~= "mock" then
    it("refuses advance() without a virtual clock", function()
      local real = backend.new()
      assert.has_error(function() real:advance(1) end)
      real:close()
    end)
  end
end)
