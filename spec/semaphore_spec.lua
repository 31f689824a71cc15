-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/semaphore/*.lua on the backend RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local helpers = require("support.helpers")
local sa = require("script_asserts")

local SEM, CHANNEL = "{pool}", "redisson_sc:{pool}"
local WAITERS, GRANT = "{pool}:rlk_waiters", "{pool}:rlk_next"
local CLAIM = 5000   -- a grant outlives a busy machine's pause between two steps on a real server
local it_virtual = helpers.it_virtual
local NIL = sa.NIL

local r = backend.new()

local function try_acquire(permits) return r:script("semaphore/try_acquire", { SEM }, { tostring(permits) }) end
local function release(permits, pub)
  return r:script("semaphore/release", { SEM, CHANNEL, WAITERS, GRANT }, { tostring(permits), tostring(CLAIM),
                                                                          pub or "publish" })
end
local function try_set(permits, pub)
  return r:script("semaphore/try_set_permits", { SEM, CHANNEL }, { tostring(permits), pub or "publish" })
end
local function add(delta, pub)
  return r:script("semaphore/add_permits", { SEM, CHANNEL, WAITERS, GRANT }, { tostring(delta), tostring(CLAIM),
                                                                              pub or "publish" })
end
-- semaphore/acquire: ticket 0 (a single try), t (a new waiter) or -t (queued already).
local function acquire(permits, ticket, pub)
  return r:script("semaphore/acquire", { SEM, CHANNEL, WAITERS, GRANT },
                  { tostring(permits), string.format("%.0f", ticket or 0), tostring(CLAIM), pub or "publish" })
end
local function cancel(ticket, permits, pub)
  return r:script("semaphore/cancel", { SEM, CHANNEL, WAITERS, GRANT },
                  { string.format("%.0f", ticket), tostring(permits), tostring(CLAIM), pub or "publish" })
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
    local K = { SEM, CHANNEL, WAITERS, GRANT }
    assert_badarg_each(script_calls("semaphore/release", {
      { { SEM, CHANNEL }, { "1", "50", "publish" } }, { { SEM, CHANNEL, WAITERS }, { "1", "50", "publish" } },
      { K, {} }, { K, { "1", "publish" } }, { K, { "1", "50", "publish", "2" } },
      { K, { "1", "0", "publish" } }, { K, { "1", "1e3", "publish" } },
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
    local K = { SEM, CHANNEL, WAITERS, GRANT }
    assert_badarg_each(script_calls("semaphore/add_permits", {
      { { SEM, CHANNEL }, { "1", "50", "publish" } }, { { SEM, CHANNEL, WAITERS }, { "1", "50", "publish" } },
      { K, {} }, { K, { "1", "publish" } }, { K, { "1", "50", "publish", "2" } },
      { K, { "1", "0", "publish" } }, { K, { "1", "-5", "publish" } },
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

-- The queue (one woken waiter per release, in arrival order): waiters queue "<ticket> <permits>"; a
-- release that leaves enough permits for the head reserves them ({pool}:rlk_next, PX claim window)
-- and grants ticket * 2^26 on the ticket's wake channel; the standard count still goes out on
-- redisson_sc:{pool}.
describe("semaphore queue and grants", function()
  local W = 33554432        -- tickets are cid * 1024 + r, at least 2^25
  local SHIFT = 67108864
  local function wake(t) return CHANNEL .. ":rlk:" .. string.format("%d", math.floor(t / 1024)) end
  local function grant_msg(t) return string.format("%.0f", t * SHIFT) end
  local function entry(t, n) return string.format("%.0f", t) .. " " .. tostring(n) end
  local function queue() return r:call("LRANGE", WAITERS, "0", "-1") end
  local function first_in_queue(rep) return type(rep) == "table" and rep[2] == 1 end
  local A, B, C, D = W + 1024, W + 2048, W + 3072, W + 4096

  it("takes free permits at once, a single try or a new waiter, without queueing", function()
    r:call("SET", SEM, "2")
    assert.equal(NIL, acquire(1, 0))
    assert.equal(NIL, acquire(1, A))
    assert.equal("0", count())
    assert.equal(0, r:call("EXISTS", WAITERS))
    assert.equal(-1, acquire(1, 0))              -- a single try: never queued
    assert.equal(0, r:call("EXISTS", WAITERS))
  end)

  it("queues waiters in arrival order, once each; the first is told so", function()
    r:call("SET", SEM, "0")
    assert.is_true(first_in_queue(acquire(1, A)))
    assert.equal(-1, acquire(2, B))
    assert.equal(-1, acquire(1, C))
    assert.is_true(first_in_queue(acquire(1, -A)))   -- queued already: stays first, once
    assert.equal(-1, acquire(2, -B))
    assert.same({ entry(A, 1), entry(B, 2), entry(C, 1) }, queue())
    assert.is_true(r:call("PTTL", WAITERS) > 0, "the queue expires when nobody comes any more")
  end)

  it("a release reserves the permits for the first waiter, grants it alone, then publishes the count", function()
    r:call("SET", SEM, "0")
    acquire(1, A)
    acquire(1, B)
    r:published()
    assert.equal(1, release(1))
    assert.equal("1", count())                   -- a reservation moves no permit
    assert.equal(entry(A, 1), r:call("GET", GRANT))
    sa.assert_pttl(r, GRANT, CLAIM, 1)
    assert.same({ entry(B, 1) }, queue())
    assert.same({ { channel = wake(A), message = grant_msg(A) }, { channel = CHANNEL, message = "1" } },
      r:published())
  end)

  it("other acquirers see the count less the reservation; only the grantee takes it", function()
    r:call("SET", SEM, "0")
    acquire(1, A)
    release(1)
    r:published()
    local before = sa.snapshot(r, { SEM, GRANT })
    assert.is_true(acquire(1, 0) > 0)              -- a single try: the reservation's PTTL
    assert.equal(-3, acquire(1, B))               -- first behind the reservation: after its window
    assert.equal(-1, acquire(1, C))
    sa.assert_unchanged(r, before)
    assert.same({ entry(B, 1), entry(C, 1) }, queue())
    assert.equal(NIL, acquire(1, -A))             -- the grantee claims
    assert.equal("0", count())
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.same({ entry(B, 1), entry(C, 1) }, queue())
  end)

  it("permits beyond the reservation are anyone's", function()
    r:call("SET", SEM, "0")
    acquire(1, A)
    release(2)                                    -- 1 reserved for A, 1 free
    assert.equal(NIL, acquire(1, 0))
    assert.is_true(acquire(1, 0) > 0)             -- the rest is reserved: its PTTL
    assert.equal(NIL, acquire(1, -A))
    assert.equal("0", count())
  end)

  it("grants in order a head at a time; the grantee's claim grants the next (the chain)", function()
    r:call("SET", SEM, "0")
    acquire(1, A)
    acquire(2, B)
    acquire(1, C)
    acquire(5, D)
    r:published()
    assert.equal(4, release(4))
    assert.equal(entry(A, 1), r:call("GET", GRANT))
    assert.same({ { channel = wake(A), message = grant_msg(A) }, { channel = CHANNEL, message = "4" } },
      r:published())
    assert.equal(NIL, acquire(1, -A))             -- claims 1 and grants B its 2 (3 left)
    assert.equal(entry(B, 2), r:call("GET", GRANT))
    assert.same({ { channel = wake(B), message = grant_msg(B) } }, r:published())
    assert.equal(NIL, acquire(2, -B))             -- claims 2 and grants C (1 left)
    assert.equal(entry(C, 1), r:call("GET", GRANT))
    assert.equal(NIL, acquire(1, -C))             -- claims the last; D wants 5: nobody granted
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.equal("0", count())
    assert.same({ entry(D, 5) }, queue())
    assert.same({ { channel = wake(C), message = grant_msg(C) } }, r:published())
  end)

  it("a head asking for more than there is holds the others back (first come, first served)", function()
    r:call("SET", SEM, "0")
    acquire(3, A)
    acquire(1, B)
    r:published()
    assert.equal(2, release(2))
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.same({ { channel = CHANNEL, message = "2" } }, r:published())
    assert.equal(3, add(1))
    assert.equal(entry(A, 3), r:call("GET", GRANT))
    assert.same({ { channel = wake(A), message = grant_msg(A) }, { channel = CHANNEL, message = "3" } },
      r:published())
  end)

  it("skips a waiter whose wake channel nobody hears (its client is gone) and grants the next", function()
    r:ssubscribe(wake(B))                         -- sharded: only B's client still listens
    r:ssubscribe(CHANNEL)
    r:call("SET", SEM, "0")
    acquire(1, A)
    acquire(1, B)
    acquire(1, C)
    r:published()
    assert.equal(1, release(1, "spublish"))
    assert.equal(entry(B, 1), r:call("GET", GRANT))
    assert.same({ entry(C, 1) }, queue())
    local got = {}
    for _, p in ipairs(r:published()) do
      if p.channel ~= wake(A) then got[#got + 1] = { channel = p.channel, message = p.message } end
    end
    assert.same({ { channel = wake(B), message = grant_msg(B) }, { channel = CHANNEL, message = "1" } }, got)
  end)

  it_virtual("an expired reservation loses no permit: the first waiter behind it takes it", function()
    r:call("SET", SEM, "0")
    acquire(1, A)                                 -- A will die
    acquire(1, B)
    release(1)
    assert.equal(-3, acquire(1, -B))              -- first now, behind the reservation
    r:advance(CLAIM + 1)
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.equal("1", count())
    assert.equal(NIL, acquire(1, -B))
    assert.equal("0", count())
    assert.equal(0, r:call("EXISTS", WAITERS))
  end)

  -- What the usual calls cost the server, command by command (sa.count_commands): the single try
  -- and the release of a semaphore nobody waits for read no TYPE and never touch the queue's keys.
  it("the usual single try runs 3 commands (4 with permits left over), the release 4, no TYPE", function()
    r:call("SET", SEM, "1")
    local rep, counts, total = sa.count_commands(r, function() return acquire(1, 0) end)
    assert.equal(NIL, rep)
    assert.same({ get = 2, decrby = 1 }, counts)
    assert.equal(3, total)
    rep, counts, total = sa.count_commands(r, function() return release(1) end)
    assert.equal(1, rep)
    assert.same({ get = 1, exists = 1, incrby = 1, publish = 1 }, counts)
    assert.equal(4, total)
    r:call("SET", SEM, "5")
    rep, counts, total = sa.count_commands(r, function() return acquire(2, 0) end)
    assert.equal(NIL, rep)
    assert.same({ get = 2, lindex = 1, decrby = 1 }, counts)
    assert.equal(4, total)
    assert.equal("3", count())
    assert.equal(0, r:call("EXISTS", WAITERS, GRANT))
  end)

  it("a single try that leaves permits over, with no reservation living, grants the first waiter they cover", function()
    r:call("SET", SEM, "0")
    acquire(1, A)                                 -- A will die
    acquire(1, B)
    release(2)                                    -- A reserved; 1 free
    r:call("DEL", GRANT)                          -- A's claim window ran out: 2 free, B queued
    r:published()
    assert.equal(NIL, acquire(1, 0))
    assert.equal("1", count())
    assert.equal(entry(B, 1), r:call("GET", GRANT))
    assert.same({ { channel = wake(B), message = grant_msg(B) } }, r:published())
    assert.is_true(acquire(1, 0) > 0)             -- the last permit is B's: its PTTL
    assert.equal(NIL, acquire(1, -B))
    assert.equal("0", count())
  end)

  it("a waiters key of another type is refused only by the calls that read the queue", function()
    r:call("SET", SEM, "1")
    r:call("SET", WAITERS, "x")
    local before = sa.snapshot(r, { WAITERS, GRANT })
    assert.equal(NIL, acquire(1, 0))              -- the single try leaves no permit over
    sa.assert_unchanged(r, before)
    before = sa.snapshot(r, { SEM, WAITERS, GRANT })
    sa.assert_error(release(1), "RLK_WRONGTYPE")  -- a rise serves the queue: it reads it
    sa.assert_error(acquire(1, A), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
  end)

  it("a reservation that ran out (its key gone) lost no permit, on every backend", function()
    r:call("SET", SEM, "0")
    acquire(1, A)                                 -- A will die
    acquire(1, B)
    release(1)
    assert.equal(-3, acquire(1, -B))
    r:call("DEL", GRANT)                          -- what its PX does after the claim window
    assert.equal("1", count())
    assert.equal(NIL, acquire(1, -B))
    assert.equal("0", count())
    assert.equal(0, r:call("EXISTS", WAITERS))
    assert.is_true(acquire(1, -A) ~= NIL)         -- the slow grantee finds nothing: queued again
    assert.same({ entry(A, 1) }, queue())
  end)

  it("a grantee whose permits went meanwhile (drained, a Redisson client) queues again at the tail", function()
    r:call("SET", SEM, "0")
    acquire(1, A)
    acquire(1, B)
    release(1)
    r:call("DECRBY", SEM, "1")                    -- Redisson's tryAcquire ignores the reservation
    assert.is_true(first_in_queue(acquire(1, -A)))  -- told to listen on the channel as well
    assert.same({ entry(B, 1), entry(A, 1) }, queue())
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.equal(1, release(1))
    assert.equal(entry(B, 1), r:call("GET", GRANT))
  end)

  it("a queued waiter that finds free, unreserved permits takes them and leaves the queue", function()
    r:call("SET", SEM, "0")
    acquire(1, A)
    acquire(1, B)
    r:call("SET", SEM, "1")                       -- Redisson's release: INCRBY + publish, no grant
    assert.equal(NIL, acquire(1, -B))
    assert.same({ entry(A, 1) }, queue())
  end)

  it("a waiter whose entry was lost joins again at the tail, and listens on the channel", function()
    r:call("SET", SEM, "0")
    acquire(1, A)
    r:call("DEL", WAITERS)
    acquire(1, B)
    assert.is_true(first_in_queue(acquire(1, -A)))
    assert.same({ entry(B, 1), entry(A, 1) }, queue())
  end)

  describe("semaphore/cancel", function()
    it("takes a waiter out of the queue; a new first one is woken to learn it is first", function()
      r:call("SET", SEM, "0")
      acquire(1, A)
      acquire(1, B)
      acquire(1, C)
      r:published()
      assert.equal(1, cancel(B, 1))               -- not first: nobody is told
      assert.same({}, r:published())
      assert.equal(1, cancel(A, 1))
      assert.same({ entry(C, 1) }, queue())
      assert.same({ { channel = wake(C), message = grant_msg(C) } }, r:published())
      assert.equal(0, cancel(A, 1))
      assert.equal(0, cancel(C, 2))               -- its permits are part of its entry
      assert.same({}, r:published())
    end)

    it("a head that asked for too much leaves: the next one the count covers is granted", function()
      r:call("SET", SEM, "0")
      acquire(2, A)
      acquire(1, B)
      r:call("SET", SEM, "1")                     -- Redisson's release: no grant
      r:published()
      assert.equal(1, cancel(A, 2))
      assert.equal(entry(B, 1), r:call("GET", GRANT))
      assert.same({ { channel = wake(B), message = grant_msg(B) } }, r:published())
    end)

    it("passes an unclaimed reservation on to the next waiter at once", function()
      r:call("SET", SEM, "0")
      acquire(1, A)
      acquire(1, B)
      release(1)
      r:published()
      assert.equal(2, cancel(A, 1))
      assert.equal(entry(B, 1), r:call("GET", GRANT))
      assert.same({ { channel = wake(B), message = grant_msg(B) } }, r:published())
      assert.equal(NIL, acquire(1, -B))
      assert.equal("0", count())
    end)

    it("drops the reservation when nobody else waits: the permits are anyone's", function()
      r:call("SET", SEM, "0")
      acquire(1, A)
      release(1)
      assert.equal(2, cancel(A, 1))
      assert.equal(0, r:call("EXISTS", GRANT))
      assert.equal(NIL, acquire(1, 0))
    end)

    it("refuses bad tickets, permits, claim windows and key counts without changing anything", function()
      r:call("SET", SEM, "0")
      acquire(1, A)
      local K = { SEM, CHANNEL, WAITERS, GRANT }
      local a = string.format("%.0f", A)
      for _, case in ipairs({ { K, { "0", "1", "50", "publish" } }, { K, { "-" .. a, "1", "50", "publish" } },
                              { K, { "11", "1", "50", "publish" } }, { K, { "67108864", "1", "50", "publish" } },
                              { K, { a, "0", "50", "publish" } }, { K, { a, "1", "0", "publish" } },
                              { K, { a, "1", "50" } }, { K, { a, "1", "50", "publish", "0" } },
                              { { SEM, CHANNEL, WAITERS }, { a, "1", "50", "publish" } } }) do
        local before = sa.snapshot(r, { SEM, WAITERS, GRANT })
        sa.assert_error(r:script("semaphore/cancel", case[1], case[2]), "RLK_BADARG")
        sa.assert_unchanged(r, before)
      end
    end)

    sa.publish_cases(r, { SEM, WAITERS, GRANT }, function()
      r:call("SET", SEM, "0")
      acquire(1, A)
      acquire(1, B)
      release(1)
    end, function(pub) return cancel(A, 1, pub) end, { wake(B) })
  end)

  describe("semaphore/acquire refuses bad input without changing anything", function()
    it("bad permits, tickets, claim windows and key or argument counts", function()
      r:call("SET", SEM, "3", "PX", "60000")
      acquire(5, A)
      local K = { SEM, CHANNEL, WAITERS, GRANT }
      local bad = {}
      for _, p in ipairs(BAD_PERMITS) do bad[#bad + 1] = { K, { p, "0", "50", "publish" } } end
      for _, t in ipairs({ "1", "-1", "33554431", "67108864", "-67108864", "01", "+33554432", "1.5", "x", "" }) do
        bad[#bad + 1] = { K, { "1", t, "50", "publish" } }
      end
      for _, c in ipairs({ "0", "-1", "1e3", "" }) do bad[#bad + 1] = { K, { "1", "0", c, "publish" } } end
      bad[#bad + 1] = { { SEM }, { "1", "0", "50", "publish" } }
      bad[#bad + 1] = { { SEM, CHANNEL, WAITERS }, { "1", "0", "50", "publish" } }
      bad[#bad + 1] = { K, { "1", "0", "50" } }
      bad[#bad + 1] = { K, { "1", "0", "50", "publish", "x" } }
      for _, case in ipairs(bad) do
        local before = sa.snapshot(r, { SEM, WAITERS, GRANT })
        sa.assert_error(r:script("semaphore/acquire", case[1], case[2]), "RLK_BADARG")
        sa.assert_unchanged(r, before)
      end
    end)

    it("a semaphore, waiters or grant key of another type", function()
      assert_wrongtype_each(function() return acquire(1, A) end, true)
      r:call("DEL", SEM)
      r:call("SET", SEM, "1")
      r:call("SET", WAITERS, "x")
      local before = sa.snapshot(r, { SEM, WAITERS, GRANT })
      sa.assert_error(acquire(1, A), "RLK_WRONGTYPE")
      sa.assert_error(release(1), "RLK_WRONGTYPE")
      sa.assert_error(add(1), "RLK_WRONGTYPE")
      sa.assert_error(cancel(A, 1), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
      r:call("DEL", WAITERS)
      r:call("HSET", GRANT, "f", "v")
      before = sa.snapshot(r, { SEM, WAITERS, GRANT })
      sa.assert_error(acquire(1, 0), "RLK_WRONGTYPE")
      sa.assert_error(release(1), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end)

    sa.publish_cases(r, { SEM, WAITERS, GRANT }, function()
      r:call("SET", SEM, "0")
      acquire(1, A)
      acquire(1, B)
      release(2)
    end, function(pub) return acquire(1, -A, pub) end, { wake(B) })   -- the chain's grant
  end)
end)

-- Redisson 4.7's newer RSemaphore calls: releaseIfExists, trySetPermits(permits, timeToLive), and
-- RExpirable's expire(Duration), clearExpire(), remainTimeToLive().
local function release_if_exists(permits, pub)
  return r:script("semaphore/release_if_exists", { SEM, CHANNEL, WAITERS, GRANT },
                  { tostring(permits), tostring(CLAIM), pub or "publish" })
end
local function try_set_ttl(permits, ttl, pub)
  return r:script("semaphore/try_set_permits_ttl", { SEM, CHANNEL }, { tostring(permits), tostring(ttl),
                                                                      pub or "publish" })
end
local function expire(ttl) return r:script("semaphore/expire", { SEM }, { tostring(ttl) }) end
local function clear_expire() return r:script("semaphore/clear_expire", { SEM }, {}) end
local function ttl() return r:script("semaphore/ttl", { SEM }, {}) end
-- TTLs the expire scripts refuse with RLK_BADLEASE.
local BAD_TTLS = { "0", "-1", "+5", "01", "1.5", "1e3", "0x10", " 1", "inf", "", "abc", "1000000000001" }

-- Each call must answer code and leave a semaphore of 5 permits (TTL 60 s) as it was.
local function assert_refused_each(code, calls)
  r:call("SET", SEM, "5", "PX", "60000")
  r:published()
  for _, call in ipairs(calls) do
    local before = sa.snapshot(r, { SEM, CHANNEL, WAITERS, GRANT })
    sa.assert_error(call(), code)
    sa.assert_unchanged(r, before)
  end
end

describe("semaphore/release_if_exists", function()
  it("adds the permits to an existing count, keeps its TTL, publishes the new count and replies 1", function()
    r:call("SET", SEM, "1", "PX", "60000")
    assert.equal(1, release_if_exists(2))
    assert.equal("3", count())
    sa.assert_pttl(r, SEM, 60000, 60000 - sa.TTL_SLACK_MS)
    assert.same({ { channel = CHANNEL, message = "3" } }, r:published())
  end)

  it("replies 0 and creates nothing when there is no key (release would create it)", function()
    assert.equal(0, release_if_exists(2))
    assert.equal(0, r:call("EXISTS", SEM))
    assert.same({}, r:published())
  end)

  it_virtual("does not bring back a semaphore whose time to live ran out", function()
    assert.equal(1, try_set_ttl(2, 1000))
    assert.equal(1, try_acquire(2))
    r:advance(1001)
    assert.equal(0, release_if_exists(2))
    assert.equal(0, r:call("EXISTS", SEM))
  end)

  it("grants the first queued waiter the permits cover, as release does", function()
    r:call("SET", SEM, "0")
    r:call("RPUSH", WAITERS, "33554433 2")
    assert.equal(1, release_if_exists(2))
    assert.equal("33554433 2", r:call("GET", GRANT))
    assert.same({}, r:call("LRANGE", WAITERS, "0", "-1"))
  end)

  it("publishes nothing when the count stays at or below 0", function()
    r:call("SET", SEM, "-5")
    assert.equal(1, release_if_exists(2))
    assert.equal("-3", count())
    assert.same({}, r:published())
  end)

  it("refuses permits out of range, a bad claim window or publish command, and overflow, changing nothing",
     function()
    local calls = each_value({ "0", "-1", "01", "1.5", "", "1000000000001" }, release_if_exists)
    calls[#calls + 1] = function()
      return r:script("semaphore/release_if_exists", { SEM, CHANNEL, WAITERS, GRANT }, { "1", "0", "publish" })
    end
    calls[#calls + 1] = function() return r:script("semaphore/release_if_exists", { SEM }, { "1", "50", "publish" }) end
    assert_refused_each("RLK_BADARG", calls)
    assert_refused_each("RLK_BADPUBLISH", { function() return release_if_exists(1, "PUBLISH") end })
    r:call("SET", SEM, "9007199254740991")
    local before = sa.snapshot(r, { SEM })
    sa.assert_error(release_if_exists(1), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  it("refuses a key of another type, or a string that is not an integer count, with RLK_WRONGTYPE", function()
    assert_wrongtype_each(function() return release_if_exists(1) end, true)
  end)
end)

describe("semaphore/try_set_permits_ttl", function()
  it("sets a missing count with the time to live, publishes it and replies 1", function()
    assert.equal(1, try_set_ttl(3, 60000))
    assert.equal("3", count())
    sa.assert_pttl(r, SEM, 60000, 60000 - sa.TTL_SLACK_MS)
    assert.same({ { channel = CHANNEL, message = "3" } }, r:published())
  end)

  it("publishes nothing for 0 permits", function()
    assert.equal(1, try_set_ttl(0, 60000))
    assert.equal("0", count())
    assert.same({}, r:published())
  end)

  it("replies 0 and leaves an existing count and its TTL (or its lack of one) alone", function()
    r:call("SET", SEM, "7")
    local before = sa.snapshot(r, { SEM })
    assert.equal(0, try_set_ttl(3, 60000))
    sa.assert_unchanged(r, before)
    r:call("SET", SEM, "7", "PX", "90000")
    before = sa.snapshot(r, { SEM })
    assert.equal(0, try_set_ttl(3, 1000))
    sa.assert_unchanged(r, before)
  end)

  it_virtual("the count vanishes when the time to live runs out; it can be set again", function()
    assert.equal(1, try_set_ttl(3, 1000))
    r:advance(999)
    assert.equal("3", count())
    r:advance(2)
    assert.equal(0, r:call("EXISTS", SEM))
    assert.equal(1, try_set_ttl(4, 1000))
  end)

  it("refuses bad permits, a bad TTL or publish command, and a key of another type, changing nothing", function()
    r:call("DEL", SEM)
    for _, p in ipairs(BAD_PERMITS) do
      sa.assert_error(try_set_ttl(p, 1000), "RLK_BADARG")
    end
    for _, t in ipairs(BAD_TTLS) do
      sa.assert_error(try_set_ttl(1, t), "RLK_BADLEASE")
    end
    sa.assert_error(try_set_ttl(1, 1000, "Publish"), "RLK_BADPUBLISH")
    sa.assert_error(r:script("semaphore/try_set_permits_ttl", { SEM, CHANNEL }, { "1", "1000" }), "RLK_BADARG")
    assert.equal(0, r:call("EXISTS", SEM))
    assert.same({}, r:published())
    assert_wrongtype_each(function() return try_set_ttl(1, 1000) end, false)
  end)
end)

describe("semaphore/expire, clear_expire, ttl", function()
  it("sets a TTL on the count key (replacing one it had) and replies 1", function()
    r:call("SET", SEM, "2")
    assert.equal(-1, ttl())
    assert.equal(1, expire(60000))
    sa.assert_pttl(r, SEM, 60000, 60000 - sa.TTL_SLACK_MS)
    local left = ttl()
    assert.is_true(left > 60000 - sa.TTL_SLACK_MS and left <= 60000)
    assert.equal(1, expire(90000))
    sa.assert_pttl(r, SEM, 90000, 90000 - sa.TTL_SLACK_MS)
    assert.same({}, r:published())
  end)

  it("touches only the count key, not rlk's queue keys", function()
    r:call("SET", SEM, "0")
    r:call("RPUSH", WAITERS, "33554433 1")
    assert.equal(1, expire(60000))
    assert.equal(-1, r:call("PTTL", WAITERS))
  end)

  it("replies 0 with no key: nothing created", function()
    assert.equal(0, expire(60000))
    assert.equal(0, clear_expire())
    assert.equal(-2, ttl())
    assert.equal(0, r:call("EXISTS", SEM))
  end)

  it("clear_expire removes the TTL (1), then finds none (0)", function()
    r:call("SET", SEM, "2", "PX", "60000")
    assert.equal(1, clear_expire())
    assert.equal(-1, r:call("PTTL", SEM))
    assert.equal(0, clear_expire())
    assert.equal("2", count())
  end)

  it_virtual("the count vanishes when the TTL runs out", function()
    r:call("SET", SEM, "2")
    assert.equal(1, expire(1000))
    r:advance(1001)
    assert.equal(-2, ttl())
    assert.equal(0, available())
  end)

  it("refuses a bad TTL, wrong counts and a key of another type, changing nothing", function()
    local calls = each_value(BAD_TTLS, expire)
    assert_refused_each("RLK_BADLEASE", calls)
    assert_refused_each("RLK_BADARG", script_calls("semaphore/expire", {
      { {}, { "1000" } }, { { SEM }, {} }, { { SEM }, { "1000", "x" } }, { { SEM, CHANNEL }, { "1000" } } }))
    assert_refused_each("RLK_BADARG", script_calls("semaphore/clear_expire", { { {}, {} }, { { SEM }, { "1" } } }))
    assert_refused_each("RLK_BADARG", script_calls("semaphore/ttl", { { {}, {} }, { { SEM }, { "1" } } }))
    assert_wrongtype_each(function() return expire(60000) end, false)
    assert_wrongtype_each(clear_expire, false)
    assert_wrongtype_each(ttl, false)
  end)
end)
