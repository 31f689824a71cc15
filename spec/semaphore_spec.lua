-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/semaphore/*.lua on the backend RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local helpers = require("support.helpers")
local sa = require("script_asserts")

local SEM, CHANNEL = "{pool}", "redisson_sc:{pool}"
local it_virtual = helpers.it_virtual

local r = backend.new()

local function try_acquire(permits) return r:script("semaphore/try_acquire", { SEM }, { tostring(permits) }) end
local function release(permits, pub)
  return r:script("semaphore/release", { SEM, CHANNEL }, { tostring(permits), pub or "publish" })
end
local function try_set(permits, pub)
  return r:script("semaphore/try_set_permits", { SEM, CHANNEL }, { tostring(permits), pub or "publish" })
end
local function add(delta, pub)
  return r:script("semaphore/add_permits", { SEM, CHANNEL }, { tostring(delta), pub or "publish" })
end
local function drain() return r:script("semaphore/drain", { SEM }, {}) end
local function available() return r:script("semaphore/available", { SEM }, {}) end
local function count() return r:call("GET", SEM) end

-- Permit counts every script taking "permits" refuses (the range is 1..10^12, or 0..10^12).
local BAD_PERMITS = { "-1", "+5", "01", "007", "1.5", "1e3", "0x10", " 1", "1 ", "inf", "nan", "", "abc",
                      "1000000000001", "9999999999999", "10000000000000", "99999999999999999999" }
-- Deltas add_permits refuses (the range is -10^12..10^12).
local BAD_DELTAS = { "+1", "-0", "01", "-01", "--1", "- 1", "1.5", "-1.5", "1e3", "0x10", " 1", "1 ", "", "-",
                     "inf", "-inf", "nan", "abc", "1000000000001", "-1000000000001", "-99999999999999999999" }
-- Values of the semaphore key that are not an integer count.
local NOT_COUNTS = { "abc", "", "1.5", "01", "+1", "-0", " 1", "1e3", "9007199254740992", "-9007199254740992",
                     "99999999999999999999" }

-- Runs call() against each setup of the semaphore key that must give RLK_WRONGTYPE, and checks
-- that the key is left as it was.
local function assert_wrongtype_each(call, with_strings)
  local setups = {}
  for _, k in ipairs({ "list", "set", "zset" }) do setups[#setups + 1] = sa.OTHER_TYPES[k] end
  setups[#setups + 1] = { "HSET", "%s", "f", "1" }
  if with_strings then
    for _, v in ipairs(NOT_COUNTS) do setups[#setups + 1] = { "SET", "%s", v } end
  end
  for _, setup in ipairs(setups) do
    r:call("DEL", SEM)
    sa.make(r, setup, SEM)
    r:published()
    local before = sa.snapshot(r, { SEM })
    sa.assert_error(call(), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
  end
end

-- Each call must answer RLK_BADARG and leave the semaphore (5 permits, TTL 60 s) as it was.
local function assert_badarg_each(calls)
  r:call("SET", SEM, "5", "PX", "60000")
  r:published()
  for _, call in ipairs(calls) do
    local before = sa.snapshot(r, { SEM, CHANNEL })
    sa.assert_error(call(), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end
end

local function script_calls(name, cases)
  local calls = {}
  for i, case in ipairs(cases) do
    calls[i] = function() return r:script(name, case[1], case[2]) end
  end
  return calls
end

local function each_value(values, fn)
  local calls = {}
  for i, v in ipairs(values) do calls[i] = function() return fn(v) end end
  return calls
end

before_each(function() r:reset() end)

describe("semaphore/try_acquire", function()
  it("takes the permits when enough are available and publishes nothing", function()
    r:call("SET", SEM, "5")
    assert.equal(1, try_acquire(3))
    assert.equal("2", count())
    assert.equal(1, try_acquire(2))
    assert.equal("0", count())
    assert.same({}, r:published())
  end)

  it("replies 0 when fewer permits are available, changing nothing", function()
    r:call("SET", SEM, "2", "PX", "60000")
    local before = sa.snapshot(r, { SEM })
    assert.equal(0, try_acquire(3))
    sa.assert_unchanged(r, before)
  end)

  it("replies 0 when there is no semaphore key and creates none", function()
    assert.equal(0, try_acquire(1))
    assert.equal(0, r:call("EXISTS", SEM))
  end)

  it("replies 0 on a negative count", function()
    r:call("SET", SEM, "-3")
    assert.equal(0, try_acquire(1))
    assert.equal("-3", count())
  end)

  it("keeps the key's TTL", function()
    r:call("SET", SEM, "5", "PX", "60000")
    assert.equal(1, try_acquire(1))
    sa.assert_pttl(r, SEM, 60000, 60000 - sa.TTL_SLACK_MS)
  end)

  it("accepts the largest permit count", function()
    r:call("SET", SEM, "1000000000001")
    assert.equal(1, try_acquire("1000000000000"))
    assert.equal("1", count())
  end)

  it_virtual("does not give permits back by itself: a holder that never releases keeps them", function()
    r:call("SET", SEM, "1")
    assert.equal(1, try_acquire(1))
    r:advance(30 * 24 * 3600 * 1000)
    assert.equal(0, try_acquire(1))
    assert.equal(1, release(1))
    assert.equal(1, try_acquire(1))
  end)

  it("refuses a key of another type, or a string that is not an integer count, with RLK_WRONGTYPE", function()
    assert_wrongtype_each(function() return try_acquire(1) end, true)
  end)

  it("refuses permits that are not an integer in 1..10^12", function()
    local bad = { "0" }
    for _, p in ipairs(BAD_PERMITS) do bad[#bad + 1] = p end
    assert_badarg_each(each_value(bad, try_acquire))
  end)

  it("refuses the wrong number of keys or arguments", function()
    assert_badarg_each(script_calls("semaphore/try_acquire", {
      { {}, { "1" } }, { { SEM, CHANNEL }, { "1" } }, { { SEM }, {} }, { { SEM }, { "1", "2" } },
    }))
  end)
end)

describe("semaphore/release", function()
  it("adds the permits, replies the new count and publishes it", function()
    r:call("SET", SEM, "1")
    assert.equal(3, release(2))
    assert.equal("3", count())
    assert.same({ { channel = CHANNEL, message = "3" } }, r:published())
  end)

  it("creates a missing key (as Redisson does) without a TTL", function()
    assert.equal(2, release(2))
    assert.equal("2", count())
    assert.equal(-1, r:call("PTTL", SEM))
    assert.same({ { channel = CHANNEL, message = "2" } }, r:published())
  end)

  it("publishes only when the new count is above 0", function()
    r:call("SET", SEM, "-5")
    assert.equal(-3, release(2))
    assert.equal(0, release(3))
    assert.same({}, r:published())
    assert.equal(1, release(1))
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
  end)

  it("keeps the key's TTL", function()
    r:call("SET", SEM, "0", "PX", "60000")
    assert.equal(1, release(1))
    sa.assert_pttl(r, SEM, 60000, 60000 - sa.TTL_SLACK_MS)
  end)

  it("counts up to 2^53-1 exactly and refuses to go beyond", function()
    r:call("SET", SEM, "9007199254740990")
    assert.equal(9007199254740991, release(1))
    assert.same({ { channel = CHANNEL, message = "9007199254740991" } }, r:published())
    r:call("SET", SEM, "9007199254740991")
    local before = sa.snapshot(r, { SEM })
    sa.assert_error(release(1), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  it("refuses a key of another type, or a string that is not an integer count, with RLK_WRONGTYPE", function()
    assert_wrongtype_each(function() return release(1) end, true)
  end)

  it("refuses permits that are not an integer in 1..10^12", function()
    local bad = { "0" }
    for _, p in ipairs(BAD_PERMITS) do bad[#bad + 1] = p end
    assert_badarg_each(each_value(bad, release))
  end)

  it("refuses the wrong number of keys or arguments", function()
    assert_badarg_each(script_calls("semaphore/release", {
      { { SEM }, { "1", "publish" } }, { { SEM, CHANNEL, "{pool}:x" }, { "1", "publish" } }, { { SEM, CHANNEL }, {} },
      { { SEM, CHANNEL }, { "1" } }, { { SEM, CHANNEL }, { "1", "publish", "2" } },
    }))
  end)

  sa.publish_cases(r, { SEM }, function() end, function(pub) return release(2, pub) end, CHANNEL)
end)

describe("semaphore/try_set_permits", function()
  it("sets a missing count without a TTL, publishes it and replies 1", function()
    assert.equal(1, try_set(5))
    assert.equal("5", count())
    assert.equal(-1, r:call("PTTL", SEM))
    assert.same({ { channel = CHANNEL, message = "5" } }, r:published())
  end)

  it("sets a count of 0 and publishes nothing", function()
    assert.equal(1, try_set(0))
    assert.equal("0", count())
    assert.same({}, r:published())
    assert.equal(0, try_acquire(1))
  end)

  it("accepts the largest count", function()
    assert.equal(1, try_set("1000000000000"))
    assert.equal("1000000000000", count())
  end)

  it("replies 0 when there is a count, even 0 or one that is not an integer, changing nothing", function()
    for _, v in ipairs({ "3", "0", "-2", "abc" }) do
      r:call("SET", SEM, v, "PX", "60000")
      local before = sa.snapshot(r, { SEM })
      assert.equal(0, try_set(7))
      sa.assert_unchanged(r, before)
    end
  end)

  it("refuses a key of another type with RLK_WRONGTYPE", function()
    assert_wrongtype_each(function() return try_set(1) end, false)
  end)

  it("refuses permits that are not an integer in 0..10^12", function()
    r:call("DEL", SEM)
    for _, p in ipairs(BAD_PERMITS) do
      sa.assert_error(try_set(p), "RLK_BADARG")
      assert.equal(0, r:call("EXISTS", SEM))
      assert.same({}, r:published())
    end
  end)

  it("refuses the wrong number of keys or arguments", function()
    for _, case in ipairs({ { { SEM }, { "1", "publish" } }, { { SEM, CHANNEL, "x" }, { "1", "publish" } },
                            { { SEM, CHANNEL }, {} }, { { SEM, CHANNEL }, { "1" } },
                            { { SEM, CHANNEL }, { "1", "publish", "2" } } }) do
      sa.assert_error(r:script("semaphore/try_set_permits", case[1], case[2]), "RLK_BADARG")
      assert.equal(0, r:call("EXISTS", SEM))
    end
    assert.same({}, r:published())
  end)

  sa.publish_cases(r, { SEM }, function() end, function(pub) return try_set(4, pub) end, CHANNEL)
end)

describe("semaphore/add_permits", function()
  it("adds a positive delta, replies the new count and publishes it", function()
    r:call("SET", SEM, "2")
    assert.equal(5, add(3))
    assert.equal("5", count())
    assert.same({ { channel = CHANNEL, message = "5" } }, r:published())
  end)

  it("takes a negative delta, even below 0, and publishes nothing", function()
    r:call("SET", SEM, "5")
    assert.equal(2, add(-3))
    assert.equal(-1, add(-3))
    assert.equal("-1", count())
    assert.same({}, r:published())
    assert.equal(0, try_acquire(1))
    assert.equal(1, add(2))
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
  end)

  it("creates a missing key with the delta", function()
    assert.equal(4, add(4))
    assert.same({ { channel = CHANNEL, message = "4" } }, r:published())
    r:call("DEL", SEM)
    assert.equal(-4, add(-4))
    assert.equal("-4", count())
    assert.same({}, r:published())
  end)

  it("adds 0 without publishing", function()
    r:call("SET", SEM, "3")
    assert.equal(3, add(0))
    assert.equal("3", count())
    assert.same({}, r:published())
  end)

  it("keeps the key's TTL (Redisson's SET drops it)", function()
    r:call("SET", SEM, "1", "PX", "60000")
    assert.equal(2, add(1))
    sa.assert_pttl(r, SEM, 60000, 60000 - sa.TTL_SLACK_MS)
    assert.equal(0, add(-2))
    sa.assert_pttl(r, SEM, 60000)
  end)

  it("accepts the largest deltas both ways", function()
    assert.equal(1000000000000, add("1000000000000"))
    assert.equal(0, add("-1000000000000"))
    assert.equal(-1000000000000, add("-1000000000000"))
    assert.equal("-1000000000000", count())
  end)

  it("refuses a delta that would take the count beyond +-(2^53-1)", function()
    for _, case in ipairs({ { "9007199254740991", "1" }, { "-9007199254740991", "-1" },
                            { "9007199254740000", "1000000000000" } }) do
      r:call("SET", SEM, case[1])
      local before = sa.snapshot(r, { SEM })
      sa.assert_error(add(case[2]), "RLK_BADARG")
      sa.assert_unchanged(r, before)
    end
  end)

  it("refuses a key of another type, or a string that is not an integer count, with RLK_WRONGTYPE", function()
    assert_wrongtype_each(function() return add(1) end, true)
  end)

  it("refuses a delta that is not an integer in -10^12..10^12", function()
    assert_badarg_each(each_value(BAD_DELTAS, add))
  end)

  it("refuses the wrong number of keys or arguments", function()
    assert_badarg_each(script_calls("semaphore/add_permits", {
      { { SEM }, { "1", "publish" } }, { { SEM, CHANNEL, "{pool}:x" }, { "1", "publish" } }, { { SEM, CHANNEL }, {} },
      { { SEM, CHANNEL }, { "1" } }, { { SEM, CHANNEL }, { "1", "publish", "2" } },
    }))
  end)

  sa.publish_cases(r, { SEM }, function() end, function(pub) return add(3, pub) end, CHANNEL)
end)

describe("semaphore/drain", function()
  it("replies the count, leaves 0, keeps the TTL and publishes nothing", function()
    r:call("SET", SEM, "7", "PX", "60000")
    assert.equal(7, drain())
    assert.equal("0", count())
    sa.assert_pttl(r, SEM, 60000, 60000 - sa.TTL_SLACK_MS)
    assert.same({}, r:published())
    assert.equal(0, try_acquire(1))
  end)

  it("replies 0 when there is no key and creates none", function()
    assert.equal(0, drain())
    assert.equal(0, r:call("EXISTS", SEM))
  end)

  it("replies 0 on a count of 0, changing nothing", function()
    r:call("SET", SEM, "0", "PX", "60000")
    local before = sa.snapshot(r, { SEM })
    assert.equal(0, drain())
    sa.assert_unchanged(r, before)
  end)

  it("replies a negative count and resets it to 0 (as java.util.concurrent.Semaphore)", function()
    r:call("SET", SEM, "-3")
    assert.equal(-3, drain())
    assert.equal("0", count())
    assert.same({}, r:published())
  end)

  it("refuses a key of another type, or a string that is not an integer count, with RLK_WRONGTYPE", function()
    assert_wrongtype_each(drain, true)
  end)

  it("refuses keys or arguments it does not take", function()
    assert_badarg_each(script_calls("semaphore/drain", {
      { {}, {} }, { { SEM, CHANNEL }, {} }, { { SEM }, { "1" } },
    }))
  end)
end)

describe("semaphore/available", function()
  it("replies the count without changing anything", function()
    for _, v in ipairs({ "5", "0", "-2", "9007199254740991" }) do
      r:call("SET", SEM, v, "PX", "60000")
      local before = sa.snapshot(r, { SEM })
      assert.equal(tonumber(v), available())
      sa.assert_unchanged(r, before)
    end
  end)

  it("replies 0 when there is no key and creates none", function()
    assert.equal(0, available())
    assert.equal(0, r:call("EXISTS", SEM))
  end)

  it("follows acquire, release and drain", function()
    assert.equal(1, try_set(4))
    assert.equal(1, try_acquire(3))
    assert.equal(1, available())
    assert.equal(3, release(2))
    assert.equal(3, available())
    assert.equal(3, drain())
    assert.equal(0, available())
  end)

  it("refuses a key of another type, or a string that is not an integer count, with RLK_WRONGTYPE", function()
    assert_wrongtype_each(available, true)
  end)

  it("refuses keys or arguments it does not take", function()
    assert_badarg_each(script_calls("semaphore/available", {
      { {}, {} }, { { SEM, CHANNEL }, {} }, { { SEM }, { "1" } },
    }))
  end)
end)
