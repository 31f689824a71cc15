-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/fence/*.lua (the resource-side checks of fencing tokens) on the backend
-- RLK_BACKEND picks (mock or a real redis-server / valkey-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local sa = require("script_asserts")

local NIL = backend.NIL
local FENCE, DATA = "{acct}:fence", "{acct}:data"
local T1, T2, T3 = "1700000000000001", "1700000000000002", "1700000000000003"

local r = backend.new()
before_each(function() r:reset() end)

local function fence(name, args, keys)
  return r:script("fence/" .. name, keys or { FENCE, DATA }, args)
end

local function highest() return r:call("GET", FENCE) end

local function assert_fenced(reply, want_highest)
  sa.assert_error(reply, "RLK_FENCED")
  assert.equal("RLK_FENCED " .. want_highest, reply.err)
end

-- Every writer: name, the arguments after the token for a write that succeeds on an empty
-- database, a setup making the data key hold a type the command refuses (nil: it refuses none),
-- and a check that the write happened.
local WRITERS = {
  { "set", { "v" }, nil, function() assert.equal("v", r:call("GET", DATA)) end },
  { "hset", { "f", "v", "g", "w" }, { "RPUSH", DATA, "x" },
    function() assert.same({ "f", "v", "g", "w" }, r:call("HGETALL", DATA)) end },
  { "del", {}, nil, function() assert.equal(0, r:call("EXISTS", DATA)) end, setup = { "SET", DATA, "x" } },
  { "expire", { "100" }, nil, function()
      local ttl = r:call("TTL", DATA)
      assert.is_true(ttl > 90 and ttl <= 100, "TTL " .. ttl)
    end, setup = { "SET", DATA, "x" } },
  { "pexpire", { "100000" }, nil, function()
      local pttl = r:call("PTTL", DATA)
      assert.is_true(pttl > 90000 and pttl <= 100000, "PTTL " .. pttl)
    end, setup = { "SET", DATA, "x" } },
  { "incrby", { "5" }, { "HSET", DATA, "f", "v" }, function() assert.equal("5", r:call("GET", DATA)) end },
  { "rpush", { "a", "b" }, { "SET", DATA, "x" },
    function() assert.same({ "a", "b" }, r:call("LRANGE", DATA, "0", "-1")) end },
  { "lpush", { "a", "b" }, { "SET", DATA, "x" },
    function() assert.same({ "b", "a" }, r:call("LRANGE", DATA, "0", "-1")) end },
  { "xadd", { "5-1", "f", "v" }, { "SET", DATA, "x" },
    function() assert.same({ { "5-1", { "f", "v" } } }, r:call("XRANGE", DATA, "-", "+")) end },
}

local function args_with(token, rest)
  local a = { token }
  for _, v in ipairs(rest) do a[#a + 1] = v end
  return a
end

describe("fence/check", function()
  it("accepts a first token, records it and replies the highest before (0)", function()
    assert.equal(0, fence("check", { T2 }, { FENCE }))
    assert.equal(T2, highest())
    assert.equal(-1, r:call("PTTL", FENCE))
  end)

  it("accepts the same token again (the same holder) and a higher one, and records the higher", function()
    fence("check", { T2 }, { FENCE })
    assert.equal(tonumber(T2), fence("check", { T2 }, { FENCE }))
    assert.equal(T2, highest())
    assert.equal(tonumber(T2), fence("check", { T3 }, { FENCE }))
    assert.equal(T3, highest())
  end)

  it("refuses a lower token with RLK_FENCED <highest> and changes nothing", function()
    fence("check", { T2 }, { FENCE })
    local before = sa.snapshot(r, { FENCE })
    assert_fenced(fence("check", { T1 }, { FENCE }), T2)
    assert_fenced(fence("check", { "1" }, { FENCE }), T2)
    sa.assert_unchanged(r, before)
  end)

  it("takes tokens up to 2^53-2 and refuses malformed ones with RLK_BADARG", function()
    for _, bad in ipairs({ "", "0", "-1", "+1", "01", "1.0", "1e3", "0x10", " 1", "1 ", "inf", "nan", "abc",
                           "9007199254740991", "9007199254740992", "99999999999999999999" }) do
      sa.assert_error(fence("check", { bad }, { FENCE }), "RLK_BADARG")
    end
    assert.equal(0, r:call("EXISTS", FENCE))
    assert.equal(0, fence("check", { "9007199254740990" }, { FENCE }))
    assert.equal("9007199254740990", highest())
  end)

  it("refuses a fence key of another type or holding a non-token with RLK_WRONGTYPE", function()
    for _, setup in ipairs({ { "HSET", FENCE, "f", "1" }, { "RPUSH", FENCE, "1" }, { "SET", FENCE, "x" },
                             { "SET", FENCE, "-5" }, { "SET", FENCE, "01" }, { "SET", FENCE, "9007199254740991" } }) do
      r:call("DEL", FENCE)
      r:call(unpack(setup))
      local before = sa.snapshot(r, { FENCE })
      sa.assert_error(fence("check", { T1 }, { FENCE }), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
    r:call("SET", FENCE, "0")
    assert.equal(0, fence("check", { T1 }, { FENCE }))
  end)

  it("refuses wrong counts with RLK_BADARG", function()
    sa.assert_error(fence("check", {}, { FENCE }), "RLK_BADARG")
    sa.assert_error(fence("check", { T1, T1 }, { FENCE }), "RLK_BADARG")
    sa.assert_error(fence("check", { T1 }, { FENCE, DATA }), "RLK_BADARG")
    assert.equal(0, r:call("EXISTS", FENCE))
  end)

  it("drops a TTL someone put on the fence key when it records a higher token", function()
    r:call("SET", FENCE, T1, "PX", "100000")
    fence("check", { T2 }, { FENCE })
    assert.equal(-1, r:call("PTTL", FENCE))
  end)
end)

for _, w in ipairs(WRITERS) do
  local name, rest, wrong, done = w[1], w[2], w[3], w[4]
  describe("fence/" .. name, function()
    local function setup() if w.setup then r:call(unpack(w.setup)) end end

    it("writes and records the token when the fence is new", function()
      setup()
      local reply = fence(name, args_with(T2, rest))
      assert.is_nil(type(reply) == "table" and reply.err or nil)
      done()
      assert.equal(T2, highest())
      assert.equal(-1, r:call("PTTL", FENCE))
    end)

    it("writes with a token equal to the highest (the same holder again), and with a higher one", function()
      setup()
      r:call("SET", FENCE, T2)
      local reply = fence(name, args_with(T2, rest))
      assert.is_nil(type(reply) == "table" and reply.err or nil)
      done()
      assert.equal(T2, highest())
      r:call("DEL", DATA)
      setup()
      reply = fence(name, args_with(T3, rest))
      assert.is_nil(type(reply) == "table" and reply.err or nil)
      done()
      assert.equal(T3, highest())
    end)

    it("refuses a lower token with RLK_FENCED <highest> and changes nothing", function()
      setup()
      r:call("SET", FENCE, T2)
      local before = sa.snapshot(r, { FENCE, DATA })
      assert_fenced(fence(name, args_with(T1, rest)), T2)
      sa.assert_unchanged(r, before)
    end)

    it("refuses bad tokens, wrong counts, one key for both and keys without one {tag}", function()
      setup()
      r:call("SET", FENCE, T2)
      local before = sa.snapshot(r, { FENCE, DATA })
      for _, bad in ipairs({ "", "0", "-1", "01", "1.5", "x", "9007199254740991" }) do
        sa.assert_error(fence(name, args_with(bad, rest)), "RLK_BADARG")
      end
      sa.assert_error(fence(name, {}), "RLK_BADARG")
      sa.assert_error(fence(name, args_with(T3, rest), { FENCE }), "RLK_BADARG")
      sa.assert_error(fence(name, args_with(T3, rest), { FENCE, DATA, "{acct}:x" }), "RLK_BADARG")
      sa.assert_error(fence(name, args_with(T3, rest), { FENCE, FENCE }), "RLK_BADARG")
      for _, keys in ipairs({ { FENCE, "{other}:data" }, { FENCE, "acct:data" }, { "acct:fence", "acct:data" },
                              { "{}:fence", "{}:data" }, { "{acct:fence", "{acct:data" } }) do
        sa.assert_error(fence(name, args_with(T3, rest), keys), "RLK_CROSSSLOT")
      end
      sa.assert_unchanged(r, before)
      -- The tag is the first {...} (Redis's rule): a prefix before it is fine.
      local reply = fence(name, args_with(T3, rest), { "app:{acct}:fence", "x{acct}:data" })
      assert.is_nil(type(reply) == "table" and reply.err or nil)
    end)

    if wrong then
      it("refuses a data key of a type the command refuses with RLK_WRONGTYPE; the token is not recorded", function()
        r:call(unpack(wrong))
        r:call("SET", FENCE, T1)
        local before = sa.snapshot(r, { FENCE, DATA })
        sa.assert_error(fence(name, args_with(T3, rest)), "RLK_WRONGTYPE")
        sa.assert_unchanged(r, before)
      end)
    end

    it("refuses a fence key that holds no token with RLK_WRONGTYPE", function()
      setup()
      r:call("HSET", FENCE, "f", "1")
      local before = sa.snapshot(r, { FENCE, DATA })
      sa.assert_error(fence(name, args_with(T3, rest)), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end)
  end)
end

describe("fence/set options", function()
  it("EX and PX set a TTL, KEEPTTL keeps it", function()
    assert.same({ ok = "OK" }, fence("set", { T1, "a", "EX", "100" }))
    local ttl = r:call("TTL", DATA)
    assert.is_true(ttl > 90 and ttl <= 100)
    assert.same({ ok = "OK" }, fence("set", { T1, "b", "keepttl" }))
    assert.is_true(r:call("TTL", DATA) > 90)
    assert.same({ ok = "OK" }, fence("set", { T1, "c", "px", "5000" }))
    local pttl = r:call("PTTL", DATA)
    assert.is_true(pttl > 4000 and pttl <= 5000)
    assert.same({ ok = "OK" }, fence("set", { T1, "d" }))
    assert.equal(-1, r:call("PTTL", DATA))
  end)

  it("NX and XX: nil when they keep the value, the token is still recorded", function()
    assert.equal(NIL, fence("set", { T1, "a", "XX" }))
    assert.equal(0, r:call("EXISTS", DATA))
    assert.equal(T1, highest())
    assert.same({ ok = "OK" }, fence("set", { T1, "a", "NX" }))
    assert.equal(NIL, fence("set", { T2, "b", "NX" }))
    assert.equal("a", r:call("GET", DATA))
    assert.equal(T2, highest())
    assert.same({ ok = "OK" }, fence("set", { T2, "b", "XX" }))
    assert.equal("b", r:call("GET", DATA))
  end)

  it("GET replies the old value (nil when none); on a non-string RLK_WRONGTYPE and nothing changes", function()
    assert.equal(NIL, fence("set", { T1, "a", "GET" }))
    assert.equal("a", fence("set", { T1, "b", "GET", "EX", "10" }))
    assert.equal("b", fence("set", { T1, "c", "NX", "GET" }))   -- NX with GET: Redis 7
    assert.equal("b", r:call("GET", DATA))
    r:call("DEL", DATA)
    r:call("RPUSH", DATA, "x")
    local before = sa.snapshot(r, { FENCE, DATA })
    sa.assert_error(fence("set", { T2, "v", "GET" }), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
    assert.same({ ok = "OK" }, fence("set", { T2, "v" }))   -- SET without GET replaces any type
    assert.equal("v", r:call("GET", DATA))
  end)

  it("refuses unknown, repeated, conflicting and malformed options with RLK_BADARG", function()
    for _, opts in ipairs({ { "EXAT", "1" }, { "PXAT", "1" }, { "PERSIST" }, { "NX", "NX" }, { "nx", "XX" },
                            { "EX", "1", "PX", "1" }, { "EX", "1", "KEEPTTL" }, { "PX", "1", "keepttl" },
                            { "EX" }, { "PX" }, { "EX", "0" }, { "EX", "-1" }, { "PX", "1.5" }, { "EX", "1e3" },
                            { "PX", "1000000000001" }, { "GET", "GET" }, { "" }, { "EX", "5", "EX", "5" } }) do
      local a = { T1, "v" }
      for _, o in ipairs(opts) do a[#a + 1] = o end
      sa.assert_error(fence("set", a), "RLK_BADARG")
    end
    sa.assert_error(fence("set", { T1 }), "RLK_BADARG")
    assert.equal(0, r:call("EXISTS", FENCE, DATA))
  end)
end)

describe("fence/expire and fence/pexpire", function()
  it("reply 0 on a missing key (the token is recorded), and take NX XX GT LT", function()
    assert.equal(0, fence("expire", { T1, "10" }))
    assert.equal(T1, highest())
    r:call("SET", DATA, "x")
    assert.equal(1, fence("expire", { T1, "100", "nx" }))
    assert.equal(0, fence("expire", { T1, "200", "NX" }))
    assert.equal(0, fence("pexpire", { T1, "50000", "GT" }))
    assert.equal(1, fence("pexpire", { T1, "50000", "LT" }))
    assert.equal(1, fence("expire", { T1, "500", "XX" }))
    assert.is_true(r:call("TTL", DATA) > 400)
  end)

  it("refuse non-positive or malformed TTLs and other conditions with RLK_BADARG", function()
    r:call("SET", DATA, "x")
    for _, name in ipairs({ "expire", "pexpire" }) do
      for _, a in ipairs({ { "0" }, { "-1" }, { "1.5" }, { "" }, { "1000000000001" }, { "10", "KEEPTTL" },
                           { "10", "" }, { "10", "NX", "XX" } }) do
        sa.assert_error(fence(name, args_with(T1, a)), "RLK_BADARG")
      end
      sa.assert_error(fence(name, { T1 }), "RLK_BADARG")
    end
    assert.equal(-1, r:call("PTTL", DATA))
    assert.equal(0, r:call("EXISTS", FENCE))
  end)
end)

describe("fence/incrby", function()
  it("adds negative and zero increments and replies the value", function()
    assert.equal(-7, fence("incrby", { T1, "-7" }))
    assert.equal(-7, fence("incrby", { T1, "0" }))
    assert.equal(3, fence("incrby", { T1, "10" }))
  end)

  it("a string that is not an integer, or an overflow: RLK_CMDERR, nothing changed", function()
    r:call("SET", FENCE, T1)
    for _, v in ipairs({ "abc", "9223372036854775807" }) do
      r:call("SET", DATA, v)
      local before = sa.snapshot(r, { FENCE, DATA })
      sa.assert_error(fence("incrby", { T2, "1" }), "RLK_CMDERR")
      sa.assert_unchanged(r, before)
    end
    r:call("SET", DATA, "1")
    sa.assert_error(fence("incrby", { T2, "99999999999999999999" }), "RLK_CMDERR")
    assert.equal(T1, highest())
  end)

  it("refuses a malformed increment with RLK_BADARG", function()
    for _, v in ipairs({ "", "+1", "01", "-0", "1.5", "x", "1e3", "123456789012345678901" }) do
      sa.assert_error(fence("incrby", { T1, v }), "RLK_BADARG")
    end
    assert.equal(0, r:call("EXISTS", FENCE, DATA))
  end)
end)

describe("fence/hset", function()
  it("refuses a field without a value with RLK_BADARG, and counts added fields", function()
    sa.assert_error(fence("hset", { T1, "f" }), "RLK_BADARG")
    sa.assert_error(fence("hset", { T1, "f", "v", "g" }), "RLK_BADARG")
    assert.equal(0, r:call("EXISTS", FENCE, DATA))
    assert.equal(2, fence("hset", { T1, "f", "v", "g", "w" }))
    assert.equal(0, fence("hset", { T1, "f", "v2" }))
    assert.equal("v2", r:call("HGET", DATA, "f"))
  end)
end)

describe("fence/rpush and fence/lpush", function()
  it("reply the list's length and refuse no element with RLK_BADARG", function()
    assert.equal(2, fence("rpush", { T1, "a", "b" }))
    assert.equal(3, fence("lpush", { T1, "z" }))
    assert.same({ "z", "a", "b" }, r:call("LRANGE", DATA, "0", "-1"))
    sa.assert_error(fence("rpush", { T1 }), "RLK_BADARG")
    sa.assert_error(fence("lpush", { T1 }), "RLK_BADARG")
  end)
end)

describe("fence/xadd", function()
  it("takes *, ms, ms-seq and ms-* ids and replies the entry's id", function()
    assert.equal("5-1", fence("xadd", { T1, "5-1", "f", "v" }))
    assert.equal("5-2", fence("xadd", { T1, "5-*", "f", "v" }))
    assert.equal("6-0", fence("xadd", { T1, "6", "f", "v", "g", "w" }))
    local id = fence("xadd", { T1, "*", "f", "v" })
    assert.is_string(id)
    assert.truthy(id:match("^%d+%-%d+$"))
    assert.equal(4, r:call("XLEN", DATA))
  end)

  it("an id not above the stream's last: RLK_CMDERR, nothing changed, token not recorded", function()
    fence("xadd", { T1, "5-1", "f", "v" })
    local before = sa.snapshot(r, { FENCE, DATA })
    sa.assert_error(fence("xadd", { T2, "5-1", "f", "v" }), "RLK_CMDERR")
    sa.assert_error(fence("xadd", { T2, "4-*", "f", "v" }), "RLK_CMDERR")
    sa.assert_unchanged(r, before)
    assert.equal(T1, highest())
  end)

  it("refuses malformed ids and a field without a value with RLK_BADARG", function()
    for _, a in ipairs({ { "x", "f", "v" }, { "", "f", "v" }, { "-1", "f", "v" }, { "1-", "f", "v" },
                         { "*-1", "f", "v" }, { "MAXLEN", "f", "v" }, { "NOMKSTREAM", "f", "v" },
                         { "1-1", "f" }, { "1-1", "f", "v", "g" }, { "1-1" } }) do
      sa.assert_error(fence("xadd", args_with(T1, a)), "RLK_BADARG")
    end
    assert.equal(0, r:call("EXISTS", FENCE, DATA))
  end)
end)

describe("fence scripts with fenced/acquire's tokens", function()
  it("a holder's token is accepted; after a later acquisition its writes are refused", function()
    local LOCK, TOKEN = "{acct}", "redisson_lock_token:{acct}"
    local a = r:script("fenced/acquire", { LOCK, TOKEN }, { "30000", "A:1" })[1]
    assert.same({ ok = "OK" }, fence("set", { string.format("%.0f", a), "from A" }))
    r:call("DEL", LOCK)   -- A's lease ran out (A was paused)
    local b = r:script("fenced/acquire", { LOCK, TOKEN }, { "30000", "B:1" })[1]
    assert.is_true(b > a)
    assert.equal(1, fence("incrby", { string.format("%.0f", b), "1" }, { FENCE, "{acct}:n" }))
    assert.same({ ok = "OK" }, fence("set", { string.format("%.0f", b), "from B" }))
    local before = sa.snapshot(r, { FENCE, DATA })
    assert_fenced(fence("set", { string.format("%.0f", a), "late A" }), string.format("%.0f", b))
    sa.assert_unchanged(r, before)
    assert.equal("from B", r:call("GET", DATA))
  end)
end)

if backend.default_name() == "mock" then
  describe("fence scripts on a cluster-like mock (strict_keys)", function()
    it("run with keys of one {tag}; keys of two slots are refused before the script runs", function()
      local s = backend.new({ backend = "mock", strict_keys = true })
      assert.same({ ok = "OK" }, s:script("fence/set", { FENCE, DATA }, { T1, "v" }))
      local reply = s:script("fence/set", { "{a}:fence", "{b}:data" }, { T1, "v" })
      assert.is_string(reply.err)
      assert.truthy(reply.err:match("^CROSSSLOT"), reply.err)
      assert.equal(0, s:call("EXISTS", "{a}:fence", "{b}:data"))
    end)
  end)
end
