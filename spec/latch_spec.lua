-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/latch/*.lua on the backend RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local sa = require("script_asserts")

local NIL = backend.NIL
local LATCH, CHANNEL = "{start}", "redisson_countdownlatch__channel__{start}"

local r = backend.new()

local function try_set(n, pub)
  return r:script("latch/try_set_count", { LATCH, CHANNEL }, { tostring(n), pub or "publish" })
end
local function count_down(pub) return r:script("latch/count_down", { LATCH, CHANNEL }, { pub or "publish" }) end
local function count() return r:script("latch/count", { LATCH }, {}) end
local function delete(pub) return r:script("latch/delete", { LATCH, CHANNEL }, { pub or "publish" }) end

local NOT_COUNTS = { "abc", "", "1.5", "01", "+1", "-0", " 1", "9007199254740992", "99999999999999999999" }
local BAD_COUNTS = { "0", "-1", "+5", "01", "1.5", "1e3", "0x10", " 1", "1 ", "inf", "nan", "", "abc",
                     "1000000000001", "9999999999999", "99999999999999999999" }

-- Each setup of the latch key that must give RLK_WRONGTYPE: key left as it was, nothing published.
local function assert_wrongtype_each(call, with_strings)
  local setups = { { "HSET", "%s", "f", "1" } }
  for _, k in ipairs({ "list", "set", "zset" }) do setups[#setups + 1] = sa.OTHER_TYPES[k] end
  if with_strings then
    for _, v in ipairs(NOT_COUNTS) do setups[#setups + 1] = { "SET", "%s", v } end
  end
  for _, setup in ipairs(setups) do
    r:call("DEL", LATCH)
    sa.make(r, setup, LATCH)
    r:published()
    local before = sa.snapshot(r, { LATCH })
    sa.assert_error(call(), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
  end
end

-- Wrong KEYS/ARGV counts: RLK_BADARG, an armed latch left as it was.
local function assert_badarg_cases(name, cases)
  r:call("SET", LATCH, "3")
  r:published()
  for _, case in ipairs(cases) do
    local before = sa.snapshot(r, { LATCH })
    sa.assert_error(r:script(name, case[1], case[2]), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end
end

before_each(function() r:reset() end)

describe("latch/try_set_count", function()
  it("arms a missing latch, publishes 1 (new count) and replies 1", function()
    assert.equal(1, try_set(3))
    assert.equal("3", r:call("GET", LATCH))
    assert.equal(-1, r:call("PTTL", LATCH))
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
  end)

  it("replies 0 on an armed latch and changes nothing", function()
    assert.equal(1, try_set(3))
    assert.equal(2, count_down())
    r:published()
    local before = sa.snapshot(r, { LATCH })
    assert.equal(0, try_set(5))
    sa.assert_unchanged(r, before)
  end)

  it("arms again once the latch opened", function()
    assert.equal(1, try_set(1))
    assert.equal(0, count_down())
    assert.equal(1, try_set(2))
    assert.equal(2, count())
  end)

  it("accepts the largest count", function()
    assert.equal(1, try_set("1000000000000"))
    assert.equal(1000000000000, count())
  end)

  it("refuses a count that is not an integer in 1..10^12, creating nothing", function()
    for _, c in ipairs(BAD_COUNTS) do
      sa.assert_error(try_set(c), "RLK_BADARG")
      assert.equal(0, r:call("EXISTS", LATCH))
    end
    assert.same({}, r:published())
  end)

  it("refuses a key of another type with RLK_WRONGTYPE", function()
    assert_wrongtype_each(function() return try_set(1) end, false)
  end)

  it("refuses the wrong number of keys or arguments", function()
    assert_badarg_cases("latch/try_set_count", {
      { { LATCH }, { "1", "publish" } }, { { LATCH, CHANNEL, "x" }, { "1", "publish" } }, { { LATCH, CHANNEL }, {} },
      { { LATCH, CHANNEL }, { "1" } }, { { LATCH, CHANNEL }, { "1", "publish", "2" } },
    })
  end)

  sa.publish_cases(r, { LATCH }, function() end, function(pub) return try_set(3, pub) end, CHANNEL)
end)

describe("latch/count_down", function()
  it("counts down by one, replying the count left and publishing nothing", function()
    assert.equal(1, try_set(3))
    r:published()
    assert.equal(2, count_down())
    assert.equal("2", r:call("GET", LATCH))
    assert.same({}, r:published())
  end)

  it("at zero deletes the key and publishes 0 (zero reached) once", function()
    assert.equal(1, try_set(2))
    r:published()
    assert.equal(1, count_down())
    assert.equal(0, count_down())
    assert.equal(0, r:call("EXISTS", LATCH))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    assert.equal(0, count_down())
    assert.same({}, r:published())
  end)

  it("replies 0 on a missing latch, creating nothing and publishing nothing", function()
    assert.equal(0, count_down())
    assert.equal(0, r:call("EXISTS", LATCH))
    assert.same({}, r:published())
  end)

  it("opens a latch holding 0 or less (written by someone else)", function()
    for _, v in ipairs({ "0", "-4" }) do
      r:call("SET", LATCH, v)
      assert.equal(0, count_down())
      assert.equal(0, r:call("EXISTS", LATCH))
      assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    end
  end)

  it("keeps a TTL set by someone else", function()
    r:call("SET", LATCH, "3", "PX", "60000")
    assert.equal(2, count_down())
    sa.assert_pttl(r, LATCH, 60000, 60000 - sa.TTL_SLACK_MS)
  end)

  it("refuses a key of another type, or a string that is not an integer, with RLK_WRONGTYPE", function()
    assert_wrongtype_each(count_down, true)
  end)

  it("refuses keys or arguments it does not take", function()
    assert_badarg_cases("latch/count_down", {
      { { LATCH }, { "publish" } }, { { LATCH, CHANNEL, "x" }, { "publish" } }, { { LATCH, CHANNEL }, {} },
      { { LATCH, CHANNEL }, { "publish", "1" } },
    })
  end)

  sa.publish_cases(r, { LATCH }, function() assert.equal(1, try_set(1)) end, count_down, CHANNEL)
end)

describe("latch/count", function()
  it("replies the count left without changing anything", function()
    for _, v in ipairs({ "3", "1", "0", "-2" }) do
      r:call("SET", LATCH, v, "PX", "60000")
      local before = sa.snapshot(r, { LATCH })
      assert.equal(tonumber(v), count())
      sa.assert_unchanged(r, before)
    end
  end)

  it("replies 0 on a missing latch and creates none", function()
    assert.equal(0, count())
    assert.equal(0, r:call("EXISTS", LATCH))
  end)

  it("refuses a key of another type, or a string that is not an integer, with RLK_WRONGTYPE", function()
    assert_wrongtype_each(count, true)
  end)

  it("refuses keys or arguments it does not take", function()
    assert_badarg_cases("latch/count", { { {}, {} }, { { LATCH, CHANNEL }, {} }, { { LATCH }, { "1" } } })
  end)
end)

describe("latch/delete", function()
  it("deletes an armed latch, publishes 0 so waiters see it open, and replies 1", function()
    assert.equal(1, try_set(5))
    r:published()
    assert.equal(1, delete())
    assert.equal(0, r:call("EXISTS", LATCH))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    assert.equal(0, count())
  end)

  it("replies 0 on a missing latch and publishes nothing", function()
    assert.equal(0, delete())
    assert.same({}, r:published())
  end)

  it("refuses a key of another type, or a string that is not an integer, with RLK_WRONGTYPE", function()
    assert_wrongtype_each(delete, true)
  end)

  it("refuses keys or arguments it does not take", function()
    assert_badarg_cases("latch/delete", {
      { { LATCH }, { "publish" } }, { { LATCH, CHANNEL, "x" }, { "publish" } }, { { LATCH, CHANNEL }, {} },
      { { LATCH, CHANNEL }, { "publish", "1" } },
    })
  end)

  sa.publish_cases(r, { LATCH }, function() assert.equal(1, try_set(2)) end, delete, CHANNEL)
end)

describe("latch life cycle", function()
  it("n count-downs open a latch armed with n, exactly once", function()
    assert.equal(1, try_set(4))
    r:published()
    local replies = {}
    for i = 1, 5 do replies[i] = count_down() end
    assert.same({ 3, 2, 1, 0, 0 }, replies)
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    assert.equal(NIL, r:call("GET", LATCH))
  end)
end)

-- rlk's time to live on a latch (Redisson 4.7's RCountDownLatch is not RExpirable).
local helpers = require("support.helpers")
local function expire(ttl, pub)
  return r:script("latch/expire", { LATCH, CHANNEL }, { tostring(ttl), pub or "publish" })
end
local function clear_expire() return r:script("latch/clear_expire", { LATCH }, {}) end
local function ttl() return r:script("latch/ttl", { LATCH }, {}) end

describe("latch/expire, clear_expire, ttl", function()
  it("gives an armed latch a TTL, publishes 1 (still armed: awaiters re-read) and replies 1", function()
    assert.equal(1, try_set(2))
    r:published()
    assert.equal(-1, ttl())
    assert.equal(1, expire(60000))
    sa.assert_pttl(r, LATCH, 60000, 60000 - sa.TTL_SLACK_MS)
    local left = ttl()
    assert.is_true(left > 60000 - sa.TTL_SLACK_MS and left <= 60000)
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
    assert.equal(2, count())
  end)

  it("replies 0 for an open latch (no key): nothing created, nothing published", function()
    assert.equal(0, expire(60000))
    assert.equal(0, clear_expire())
    assert.equal(-2, ttl())
    assert.equal(0, r:call("EXISTS", LATCH))
    assert.same({}, r:published())
  end)

  it("count_down keeps the TTL", function()
    assert.equal(1, try_set(3))
    assert.equal(1, expire(60000))
    assert.equal(2, count_down())
    sa.assert_pttl(r, LATCH, 60000, 60000 - sa.TTL_SLACK_MS)
  end)

  it("clear_expire removes the TTL (1), then finds none (0); publishes nothing", function()
    assert.equal(1, try_set(1))
    assert.equal(1, expire(60000))
    r:published()
    assert.equal(1, clear_expire())
    assert.equal(-1, r:call("PTTL", LATCH))
    assert.equal(0, clear_expire())
    assert.same({}, r:published())
  end)

  helpers.it_virtual("the latch opens (count 0) when the TTL runs out", function()
    assert.equal(1, try_set(5))
    assert.equal(1, expire(1000))
    r:advance(999)
    assert.equal(5, count())
    r:advance(2)
    assert.equal(0, count())
    assert.equal(-2, ttl())
  end)

  it("refuses a bad TTL, publish command and argument counts, changing nothing", function()
    for _, t in ipairs({ "0", "-1", "01", "1.5", "", "inf", "1000000000001" }) do
      r:call("SET", LATCH, "3")
      r:published()
      local before = sa.snapshot(r, { LATCH })
      sa.assert_error(expire(t), "RLK_BADLEASE")
      sa.assert_unchanged(r, before)
    end
    local before = sa.snapshot(r, { LATCH })
    sa.assert_error(expire(1000, "PUBLISH"), "RLK_BADPUBLISH")
    sa.assert_unchanged(r, before)
    assert_badarg_cases("latch/expire", { { { LATCH }, { "1000", "publish" } }, { { LATCH, CHANNEL }, { "1000" } } })
    assert_badarg_cases("latch/clear_expire", { { {}, {} }, { { LATCH }, { "x" } } })
    assert_badarg_cases("latch/ttl", { { {}, {} }, { { LATCH }, { "x" } } })
  end)

  it("refuses a key of another type with RLK_WRONGTYPE", function()
    assert_wrongtype_each(function() return expire(60000) end, false)
    assert_wrongtype_each(clear_expire, false)
    assert_wrongtype_each(ttl, false)
  end)
end)
