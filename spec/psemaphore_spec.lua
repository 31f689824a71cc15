-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/psemaphore/*.lua on the backend RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local helpers = require("support.helpers")
local sa = require("script_asserts")

local NIL = backend.NIL
local SEM, TIMEOUTS, CHANNEL = "{slots}", "{slots}:timeout", "redisson_sc:{slots}"
local KEYS = { SEM, TIMEOUTS, CHANNEL }
local WAITERS, GRANT = "{slots}:rlk_waiters", "{slots}:rlk_next"
-- acquire, release and add_permits also take the queue's keys (docs/runtime.md, "The semaphores' queue")
local QKEYS = { SEM, TIMEOUTS, CHANNEL, WAITERS, GRANT }
local CLAIM = 5000   -- a grant outlives a busy machine's pause between two steps on a real server
local LEASE = 30000
local NON_EXPIRABLE = "922337203685477" -- Redisson's expiry for a permit taken without a lease
local it_virtual = helpers.it_virtual

local r = backend.new()

-- The publish argument the wrappers pass (sa.publish_cases switches it through with_pub).
local PUB = "publish"
local function with_pub(fn)
  return function(pub)
    PUB = pub
    local ok, reply = pcall(fn)
    PUB = "publish"
    assert(ok, reply)
    return reply
  end
end

-- psemaphore/acquire as a single try (ticket 0), the ids after the fixed arguments.
local function acquire(lease, ...)
  return r:script("psemaphore/acquire", QKEYS, { tostring(lease), "0", tostring(CLAIM), PUB, ... })
end
-- psemaphore/acquire with a ticket: t (a new waiter) or -t (queued already).
local function acquire_t(ticket, ...)
  return r:script("psemaphore/acquire", QKEYS, { tostring(LEASE), string.format("%.0f", ticket), tostring(CLAIM),
                                                 PUB, ... })
end
local function release(...) return r:script("psemaphore/release", QKEYS, { tostring(CLAIM), PUB, ... }) end
-- semaphore/cancel serves both semaphores (the same count key, queue and grant).
local function cancel(ticket, permits)
  return r:script("semaphore/cancel", { SEM, CHANNEL, WAITERS, GRANT },
                  { string.format("%.0f", ticket), tostring(permits), tostring(CLAIM), PUB })
end
local function update_lease(lease, id)
  return r:script("psemaphore/update_lease", KEYS, { tostring(lease), id, PUB })
end
local function try_set(permits) return r:script("psemaphore/try_set_permits", KEYS, { tostring(permits), PUB }) end
local function add(delta)
  return r:script("psemaphore/add_permits", QKEYS, { tostring(delta), tostring(CLAIM), PUB })
end
local function available() return r:script("psemaphore/available", KEYS, { PUB }) end
local function count() return r:call("GET", SEM) end
local function expiry(id)
  local score = r:call("ZSCORE", TIMEOUTS, id)
  return score ~= NIL and tonumber(score) or nil
end

-- The server's clock in ms (TIME), as the scripts read it.
local function server_ms() return r:time_ms() end

-- Runs fn() between two readings of the server clock; returns fn's reply and the two readings.
local function timed(fn)
  local t0 = server_ms()
  local reply = fn()
  return reply, t0, server_ms()
end

local function assert_between(lo, hi, value, what)
  assert.is_number(value, what)
  assert.is_true(value >= lo and value <= hi, string.format("%s: %s not in %s..%s", what, tostring(value),
    tostring(lo), tostring(hi)))
end

-- Adds a permit that expired 1 ms ago (or at `at`, an absolute server time in ms).
local function add_expired_permit(id, at)
  r:call("ZADD", TIMEOUTS, tostring(at or (server_ms() - 1)), id)
end

-- Values of the semaphore key that are not an integer count.
local NOT_COUNTS = { "abc", "", "1.5", "01", "-0", "9007199254740992" }
local BAD_PERMITS = { "-1", "+5", "01", "1.5", "1e3", "0x10", " 1", "inf", "nan", "", "abc", "1000000000001" }
local BAD_DELTAS = { "+1", "-0", "01", "-01", "1.5", "1e3", " 1", "", "-", "nan", "1000000000001", "-1000000000001" }

-- Every RLK_WRONGTYPE case of a script: the semaphore key of another type or not an integer, the
-- timeouts key of another type; each leaves both keys as they were (with an expired permit that
-- must not have been reclaimed).
local function wrongtype_cases(call)
  it("refuses a semaphore or timeouts key of the wrong type with RLK_WRONGTYPE, reclaiming nothing", function()
    local setups = {
      { SEM, { "RPUSH", "%s", "a" } }, { SEM, { "HSET", "%s", "f", "1" } }, { SEM, { "SADD", "%s", "a" } },
      { TIMEOUTS, { "SET", "%s", "1" } }, { TIMEOUTS, { "HSET", "%s", "f", "1" } },
      { TIMEOUTS, { "RPUSH", "%s", "a" } }, { TIMEOUTS, { "SADD", "%s", "a" } },
    }
    for _, v in ipairs(NOT_COUNTS) do setups[#setups + 1] = { SEM, { "SET", "%s", v } } end
    for _, setup in ipairs(setups) do
      r:call("DEL", SEM, TIMEOUTS)
      if setup[1] == SEM then add_expired_permit("old") else r:call("SET", SEM, "1") end
      sa.make(r, setup[2], setup[1])
      r:published()
      local before = sa.snapshot(r, { SEM, TIMEOUTS })
      sa.assert_error(call(), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
  end)
end

-- Each call must answer `code` and leave the semaphore (2 available, one live and one expired
-- permit, both keys with a TTL) as it was.
local function assert_refused_each(code, calls)
  r:call("SET", SEM, "2", "PX", "600000")
  r:call("ZADD", TIMEOUTS, tostring(server_ms() + 600000), "live")
  add_expired_permit("old")
  r:call("PEXPIRE", TIMEOUTS, "600000")
  r:published()
  for _, call in ipairs(calls) do
    local before = sa.snapshot(r, { SEM, TIMEOUTS, CHANNEL })
    sa.assert_error(call(), code)
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

describe("psemaphore/acquire", function()
  it("takes a permit: stores the id with expiry TIME + lease, replies {id}", function()
    assert.equal(1, try_set(2))
    r:published()
    local reply, t0, t1 = timed(function() return acquire(LEASE, "p1") end)
    assert.same({ "p1" }, reply)
    assert.equal("1", count())
    assert_between(t0 + LEASE, t1 + LEASE, expiry("p1"), "expiry of p1")
    assert.same({}, r:published())
  end)

  it("takes several permits at once with one lease", function()
    assert.equal(1, try_set(3))
    assert.same({ "a", "b", "c" }, acquire(LEASE, "a", "b", "c"))
    assert.equal("0", count())
    assert.equal(3, r:call("ZCARD", TIMEOUTS))
    assert.equal(expiry("a"), expiry("c"))
  end)

  it("takes all or nothing: not enough permits for every id changes nothing", function()
    assert.equal(1, try_set(2))
    r:published()
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    assert.equal(NIL, acquire(LEASE, "a", "b", "c"))
    sa.assert_unchanged(r, before)
  end)

  it("replies how long until the earliest held permit expires when none is available", function()
    assert.equal(1, try_set(2))
    assert.same({ "a" }, acquire(20000, "a"))
    assert.same({ "b" }, acquire(600000, "b"))
    r:published()
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    local wait = acquire(LEASE, "c")
    assert_between(1, 20000, wait, "wait hint")
    assert.is_true(wait > 20000 - sa.TTL_SLACK_MS, "wait hint " .. wait)
    sa.assert_unchanged(r, before)
  end)

  it("replies nil when no held permit expires by itself (none, or only Redisson's lease-less ones)", function()
    r:call("SET", SEM, "0")
    assert.equal(NIL, acquire(LEASE, "a"))
    r:call("ZADD", TIMEOUTS, NON_EXPIRABLE, "forever")
    assert.equal(NIL, acquire(LEASE, "a"))
    assert.equal(1, r:call("ZCARD", TIMEOUTS))
  end)

  it("replies nil when there is no semaphore key and creates no key", function()
    assert.equal(NIL, acquire(LEASE, "a"))
    assert.equal(0, r:call("EXISTS", SEM, TIMEOUTS))
    assert.same({}, r:published())
  end)

  it("reclaims expired permits first and takes one of them", function()
    r:call("SET", SEM, "0")
    add_expired_permit("old")
    assert.same({ "new" }, acquire(LEASE, "new"))
    assert.equal("0", count())
    assert.is_nil(expiry("old"))
    assert.is_number(expiry("new"))
    assert.same({}, r:published()) -- no permit left over for anyone else
  end)

  it("publishes the count left over when it reclaimed more than it took", function()
    r:call("SET", SEM, "0")
    add_expired_permit("old1")
    add_expired_permit("old2")
    add_expired_permit("old3")
    assert.same({ "new" }, acquire(LEASE, "new"))
    assert.equal("2", count())
    assert.same({ { channel = CHANNEL, message = "2" } }, r:published())
  end)

  it("reclaims and publishes even when it cannot acquire", function()
    r:call("SET", SEM, "0")
    add_expired_permit("old")
    assert.equal(NIL, acquire(LEASE, "a", "b"))
    assert.equal("1", count())
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
  end)

  it("reclaims from a missing count, creating it", function()
    add_expired_permit("old")
    assert.equal(NIL, acquire(LEASE, "a", "b"))
    assert.equal("1", count())
  end)

  it("gives the timeouts key the semaphore key's TTL", function()
    r:call("SET", SEM, "2", "PX", "60000")
    assert.same({ "a" }, acquire(LEASE, "a"))
    sa.assert_pttl(r, TIMEOUTS, 60000, 60000 - sa.TTL_SLACK_MS)
    r:call("PERSIST", SEM)
    assert.same({ "b" }, acquire(LEASE, "b"))
    sa.assert_pttl(r, TIMEOUTS, 60000) -- left as it was
  end)

  it("accepts the smallest and largest lease and an id of 1024 bytes", function()
    r:call("SET", SEM, "3")
    local long = string.rep("i", 1024)
    local reply, t0, t1 = timed(function() return acquire("1000000000000", long) end)
    assert.same({ long }, reply)
    assert_between(t0 + 1e12, t1 + 1e12, expiry(long), "expiry")
    assert.same({ "x" }, acquire("1", "x"))
  end)

  it("takes an id that is held but expired (reclaimed first)", function()
    r:call("SET", SEM, "0")
    add_expired_permit("a")
    assert.same({ "a" }, acquire(LEASE, "a"))
    assert.is_true(expiry("a") > server_ms())
  end)

  it_virtual("counts a permit as expired from its expiry time on (score <= now)", function()
    assert.equal(1, try_set(1))
    assert.same({ "a" }, acquire(1000, "a"))
    r:advance(999)
    assert.equal(1, acquire(1000, "b"))
    r:advance(1)
    assert.same({ "b" }, acquire(1000, "b"))
    assert.is_nil(expiry("a"))
  end)

  it("refuses an id that is held and not expired", function()
    assert_refused_each("RLK_HELD", { function() return acquire(LEASE, "live") end,
                                        function() return acquire(LEASE, "new", "live") end })
  end)

  it("refuses an empty, too long or repeated id", function()
    assert_refused_each("RLK_BADARG", {
      function() return acquire(LEASE, "") end,
      function() return acquire(LEASE, "a", string.rep("i", 1025)) end,
      function() return acquire(LEASE, "a", "b", "a") end,
    })
  end)

  it("refuses a lease that is not an integer in 1..10^12", function()
    assert_refused_each("RLK_BADLEASE", each_value(sa.BAD_LEASES, function(l) return acquire(l, "a") end))
  end)

  it("refuses a reclaim that would take the count beyond 2^53-1", function()
    r:call("SET", SEM, "9007199254740991")
    add_expired_permit("old")
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    sa.assert_error(acquire(LEASE, "a"), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  wrongtype_cases(function() return acquire(LEASE, "a") end)

  it("refuses the wrong number of keys or arguments", function()
    assert_refused_each("RLK_BADARG", script_calls("psemaphore/acquire", {
      { KEYS, { "1000", "0", "50", "publish", "a" } },
      { { SEM, TIMEOUTS, CHANNEL, WAITERS }, { "1000", "0", "50", "publish", "a" } },
      { { SEM, TIMEOUTS, CHANNEL, WAITERS, GRANT, "x" }, { "1000", "0", "50", "publish", "a" } },
      { QKEYS, { "1000", "0", "50", "publish" } }, { QKEYS, { "1000" } }, { QKEYS, {} },
      { QKEYS, { "1000", "1", "50", "publish", "a" } }, { QKEYS, { "1000", "67108864", "50", "publish", "a" } },
      { QKEYS, { "1000", "x", "50", "publish", "a" } }, { QKEYS, { "1000", "0", "0", "publish", "a" } },
      { QKEYS, { "1000", "0", "1e3", "publish", "a" } },
    }))
  end)

  sa.publish_cases(r, { SEM, TIMEOUTS }, function()
    r:call("SET", SEM, "0")
    add_expired_permit("old1")
    add_expired_permit("old2")
  end, with_pub(function() return acquire(LEASE, "a") end), CHANNEL)
end)

describe("psemaphore/release", function()
  before_each(function()
    assert.equal(1, try_set(3))
    assert.same({ "a", "b" }, acquire(LEASE, "a", "b"))
    r:published()
  end)

  it("gives a held permit back: replies 1, publishes the new count", function()
    assert.equal(1, release("a"))
    assert.equal("2", count())
    assert.is_nil(expiry("a"))
    assert.is_number(expiry("b"))
    assert.same({ { channel = CHANNEL, message = "2" } }, r:published())
  end)

  it("gives several back and replies how many were held", function()
    assert.equal(2, release("a", "zzz", "b", "a"))
    assert.equal("3", count())
    assert.equal(0, r:call("EXISTS", TIMEOUTS))
    assert.same({ { channel = CHANNEL, message = "3" } }, r:published())
  end)

  it("replies 0 for an unknown or already released id and changes nothing", function()
    assert.equal(1, release("a"))
    r:published()
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    assert.equal(0, release("a"))
    assert.equal(0, release("never"))
    sa.assert_unchanged(r, before)
  end)

  it("replies 0 for an expired id, which is reclaimed (returned to the count) all the same", function()
    add_expired_permit("old")
    assert.equal(0, release("old"))
    assert.equal("2", count())
    assert.is_nil(expiry("old"))
    assert.same({ { channel = CHANNEL, message = "2" } }, r:published())
  end)

  it("publishes nothing when the count stays at or below 0", function()
    r:call("SET", SEM, "-5")
    assert.equal(2, release("a", "b"))
    assert.equal("-3", count())
    assert.same({}, r:published())
  end)

  it("recreates a missing count", function()
    r:call("DEL", SEM)
    assert.equal(1, release("a"))
    assert.equal("1", count())
  end)

  it_virtual("replies 0 once the lease ran out", function()
    r:advance(LEASE)
    assert.equal(0, release("a"))
    assert.equal("3", count())
    assert.equal(0, r:call("EXISTS", TIMEOUTS))
  end)

  it("refuses an empty or too long id, or a release that would overflow the count", function()
    assert_refused_each("RLK_BADARG", {
      function() return release("") end,
      function() return release("live", string.rep("i", 1025)) end,
    })
    r:call("SET", SEM, "9007199254740990")
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    sa.assert_error(release("a", "b"), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  wrongtype_cases(function() return release("a") end)

  it("refuses the wrong number of keys or arguments", function()
    assert_refused_each("RLK_BADARG", script_calls("psemaphore/release", {
      { KEYS, { "50", "publish", "live" } }, { { SEM, TIMEOUTS, CHANNEL, WAITERS }, { "50", "publish", "live" } },
      { QKEYS, { "50", "publish" } }, { QKEYS, { "50" } }, { QKEYS, {} },
      { QKEYS, { "0", "publish", "live" } }, { QKEYS, { "x", "publish", "live" } },
    }))
  end)

  sa.publish_cases(r, { SEM, TIMEOUTS }, function()
    r:call("SET", SEM, "1")
    assert.same({ "a" }, acquire(LEASE, "a"))
  end, with_pub(function() return release("a") end), CHANNEL)
end)

describe("psemaphore/update_lease", function()
  before_each(function()
    assert.equal(1, try_set(2))
    assert.same({ "a" }, acquire(LEASE, "a"))
    r:published()
  end)

  it("sets a held permit's expiry to TIME + lease and replies 1", function()
    local reply, t0, t1 = timed(function() return update_lease(600000, "a") end)
    assert.equal(1, reply)
    assert_between(t0 + 600000, t1 + 600000, expiry("a"), "expiry")
    assert.equal("1", count())
    assert.same({}, r:published())
  end)

  it("may shorten the lease", function()
    local reply, t0, t1 = timed(function() return update_lease(1, "a") end)
    assert.equal(1, reply)
    assert_between(t0 + 1, t1 + 1, expiry("a"), "expiry")
  end)

  it("replies 0 for an unknown id and changes nothing", function()
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    assert.equal(0, update_lease(LEASE, "never"))
    sa.assert_unchanged(r, before)
  end)

  it("replies 0 for an expired id, which stays gone (reclaimed, count + 1, published)", function()
    add_expired_permit("old")
    assert.equal(0, update_lease(LEASE, "old"))
    assert.is_nil(expiry("old"))
    assert.equal("2", count())
    assert.same({ { channel = CHANNEL, message = "2" } }, r:published())
  end)

  it_virtual("keeps a permit past its first lease", function()
    r:advance(LEASE - 1)
    assert.equal(1, update_lease(5000, "a"))
    r:advance(4999)
    assert.equal(1, release("a"))
  end)

  it("refuses a bad lease, an empty or too long id", function()
    assert_refused_each("RLK_BADLEASE", each_value(sa.BAD_LEASES, function(l) return update_lease(l, "live") end))
    assert_refused_each("RLK_BADARG", {
      function() return update_lease(LEASE, "") end,
      function() return update_lease(LEASE, string.rep("i", 1025)) end,
    })
  end)

  it("refuses a reclaim that would overflow the count", function()
    r:call("SET", SEM, "9007199254740991")
    add_expired_permit("old")
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    sa.assert_error(update_lease(LEASE, "a"), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  wrongtype_cases(function() return update_lease(LEASE, "a") end)

  it("refuses the wrong number of keys or arguments", function()
    assert_refused_each("RLK_BADARG", script_calls("psemaphore/update_lease", {
      { { SEM, TIMEOUTS }, { "1000", "live", "publish" } }, { KEYS, { "1000" } }, { KEYS, { "1000", "live" } },
      { KEYS, { "1000", "live", "publish", "x" } },
    }))
  end)

  sa.publish_cases(r, { SEM, TIMEOUTS }, function()
    r:call("SET", SEM, "1")
    assert.same({ "live" }, acquire(LEASE, "live"))
    add_expired_permit("old")
  end, with_pub(function() return update_lease(LEASE, "live") end), CHANNEL)
end)

describe("psemaphore/try_set_permits", function()
  it("sets a missing count, publishes it and replies 1", function()
    assert.equal(1, try_set(5))
    assert.equal("5", count())
    assert.equal(-1, r:call("PTTL", SEM))
    assert.same({ { channel = CHANNEL, message = "5" } }, r:published())
  end)

  it("sets 0 without publishing", function()
    assert.equal(1, try_set(0))
    assert.equal("0", count())
    assert.same({}, r:published())
  end)

  it("replies 0 when there is a count, changing nothing", function()
    r:call("SET", SEM, "3", "PX", "60000")
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    assert.equal(0, try_set(7))
    sa.assert_unchanged(r, before)
  end)

  it("reclaims first: expired permits join an existing count, which is not replaced", function()
    r:call("SET", SEM, "1")
    add_expired_permit("old")
    assert.equal(0, try_set(7))
    assert.equal("2", count())
    assert.same({ { channel = CHANNEL, message = "2" } }, r:published())
  end)

  it("reclaims first: expired permits with no count create it, so nothing is set", function()
    add_expired_permit("old")
    assert.equal(0, try_set(7))
    assert.equal("1", count())
  end)

  it("refuses a count that is not an integer in 0..10^12, or a reclaim that would overflow", function()
    assert_refused_each("RLK_BADARG", each_value(BAD_PERMITS, try_set))
    r:call("SET", SEM, "9007199254740991")
    add_expired_permit("old")
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    sa.assert_error(try_set(1), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  wrongtype_cases(function() return try_set(1) end)

  it("refuses the wrong number of keys or arguments", function()
    assert_refused_each("RLK_BADARG", script_calls("psemaphore/try_set_permits", {
      { { SEM, CHANNEL }, { "1", "publish" } }, { KEYS, {} }, { KEYS, { "1" } }, { KEYS, { "1", "publish", "2" } },
    }))
  end)

  sa.publish_cases(r, { SEM, TIMEOUTS }, function() end, with_pub(function() return try_set(3) end), CHANNEL)
end)

describe("psemaphore/add_permits", function()
  it("adds a delta and publishes the new count (not the delta)", function()
    r:call("SET", SEM, "2")
    assert.equal(5, add(3))
    assert.same({ { channel = CHANNEL, message = "5" } }, r:published())
  end)

  it("takes a negative delta, below 0 too, without publishing", function()
    r:call("SET", SEM, "2")
    assert.equal(-1, add(-3))
    assert.equal("-1", count())
    assert.same({}, r:published())
  end)

  it("creates a missing count and keeps an existing TTL", function()
    assert.equal(4, add(4))
    r:call("PEXPIRE", SEM, "60000")
    assert.equal(3, add(-1))
    sa.assert_pttl(r, SEM, 60000, 60000 - sa.TTL_SLACK_MS)
  end)

  it("reclaims first and publishes the count when it rose", function()
    r:call("SET", SEM, "0")
    add_expired_permit("old1")
    add_expired_permit("old2")
    assert.equal(1, add(-1))
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
    assert.equal(0, r:call("EXISTS", TIMEOUTS))
  end)

  it("adds 0 without publishing", function()
    r:call("SET", SEM, "3")
    assert.equal(3, add(0))
    assert.same({}, r:published())
  end)

  it("refuses a bad delta or one that would take the count beyond +-(2^53-1)", function()
    assert_refused_each("RLK_BADARG", each_value(BAD_DELTAS, add))
    r:call("DEL", TIMEOUTS)
    for _, case in ipairs({ { "9007199254740991", "1" }, { "-9007199254740991", "-1" } }) do
      r:call("SET", SEM, case[1])
      local before = sa.snapshot(r, { SEM, TIMEOUTS })
      sa.assert_error(add(case[2]), "RLK_BADARG")
      sa.assert_unchanged(r, before)
    end
    r:call("SET", SEM, "9007199254740991")
    add_expired_permit("old")
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    sa.assert_error(add(-5), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  wrongtype_cases(function() return add(1) end)

  it("refuses the wrong number of keys or arguments", function()
    assert_refused_each("RLK_BADARG", script_calls("psemaphore/add_permits", {
      { KEYS, { "1", "50", "publish" } }, { QKEYS, {} }, { QKEYS, { "1" } }, { QKEYS, { "1", "50" } },
      { QKEYS, { "1", "50", "publish", "2" } }, { QKEYS, { "1", "0", "publish" } },
    }))
  end)

  sa.publish_cases(r, { SEM, TIMEOUTS }, function() r:call("SET", SEM, "0") end,
    with_pub(function() return add(2) end), CHANNEL)
end)

describe("psemaphore/available", function()
  it("replies the count, changing nothing when nothing expired", function()
    r:call("SET", SEM, "4", "PX", "60000")
    r:call("ZADD", TIMEOUTS, tostring(server_ms() + 600000), "live")
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    assert.equal(4, available())
    sa.assert_unchanged(r, before)
  end)

  it("replies 0 when there is nothing, creating no key", function()
    assert.equal(0, available())
    assert.equal(0, r:call("EXISTS", SEM, TIMEOUTS))
  end)

  it("reclaims expired permits, publishes and counts them", function()
    r:call("SET", SEM, "1")
    add_expired_permit("old")
    assert.equal(2, available())
    assert.equal("2", count())
    assert.same({ { channel = CHANNEL, message = "2" } }, r:published())
  end)

  it("replies a negative count", function()
    r:call("SET", SEM, "-2")
    add_expired_permit("old")
    assert.equal(-1, available())
    assert.same({}, r:published())
  end)

  it("refuses a reclaim that would overflow the count", function()
    r:call("SET", SEM, "9007199254740991")
    add_expired_permit("old")
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    sa.assert_error(available(), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  wrongtype_cases(available)

  it("refuses keys or arguments it does not take", function()
    assert_refused_each("RLK_BADARG", script_calls("psemaphore/available", {
      { { SEM, TIMEOUTS }, { "publish" } }, { KEYS, {} }, { KEYS, { "publish", "1" } },
    }))
  end)

  sa.publish_cases(r, { SEM, TIMEOUTS }, function()
    r:call("SET", SEM, "0")
    add_expired_permit("old")
  end, with_pub(available), CHANNEL)
end)

describe("psemaphore life cycle", function()
  it_virtual("a killed holder's permit comes back when its lease runs out", function()
    assert.equal(1, try_set(1))
    assert.same({ "dead" }, acquire(10000, "dead"))
    assert.equal(10000, acquire(10000, "b"))
    r:advance(4000)
    assert.equal(6000, acquire(10000, "b"))
    r:advance(6000)
    assert.same({ "b" }, acquire(10000, "b"))
    assert.equal(0, release("dead"))
    assert.equal(1, release("b"))
    assert.equal(1, available())
  end)
end)

describe("psemaphore/size", function()
  local function size() return r:script("psemaphore/size", { SEM, TIMEOUTS }, {}) end

  it("replies the count and the held permits, expired ones included, changing nothing", function()
    r:call("SET", SEM, "2")
    r:call("ZADD", TIMEOUTS, tostring(server_ms() + 600000), "live")
    add_expired_permit("old")
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    assert.same({ 2, 2 }, size())
    sa.assert_unchanged(r, before)
    assert.same({}, r:published())
  end)

  it("replies {0, 0} when there is nothing, creating no key", function()
    assert.same({ 0, 0 }, size())
    assert.equal(0, r:call("EXISTS", SEM, TIMEOUTS))
  end)

  it("replies a negative count", function()
    r:call("SET", SEM, "-3")
    assert.same({ -3, 0 }, size())
  end)

  it("refuses a semaphore or timeouts key of the wrong type with RLK_WRONGTYPE", function()
    r:call("HSET", SEM, "f", "1")
    sa.assert_error(size(), "RLK_WRONGTYPE")
    r:call("DEL", SEM)
    r:call("SET", SEM, "x")
    sa.assert_error(size(), "RLK_WRONGTYPE")
    r:call("SET", SEM, "1")
    r:call("SET", TIMEOUTS, "1")
    sa.assert_error(size(), "RLK_WRONGTYPE")
  end)

  it("refuses keys or arguments it does not take", function()
    assert_refused_each("RLK_BADARG", script_calls("psemaphore/size", {
      { { SEM }, {} }, { KEYS, {} }, { { SEM, TIMEOUTS }, { "1" } },
    }))
  end)
end)

-- The waiter queue: the same queue, reservation and grants as the plain semaphore
-- (scripts/lib/sem_grant.lua, sem_claim.lua, sem_queue.lua); a waiter's permits are its ids.
describe("psemaphore queue and grants", function()
  local W = 33554432        -- tickets are cid * 1024 + r, at least 2^25
  local SHIFT = 67108864
  local function wake(t) return CHANNEL .. ":rlk:" .. string.format("%d", math.floor(t / 1024)) end
  local function grant_msg(t) return string.format("%.0f", t * SHIFT) end
  local function entry(t, n) return string.format("%.0f", t) .. " " .. tostring(n) end
  local function queue() return r:call("LRANGE", WAITERS, "0", "-1") end
  local function first_in_queue(rep) return type(rep) == "table" and rep[1] == -1 end
  local A, B, C, D = W + 1024, W + 2048, W + 3072, W + 4096

  it("takes free permits at once, a single try or a new waiter, without queueing", function()
    r:call("SET", SEM, "2")
    assert.same({ "a" }, acquire(LEASE, "a"))
    assert.same({ "b" }, acquire_t(A, "b"))
    assert.equal("0", count())
    assert.equal(0, r:call("EXISTS", WAITERS))
    assert.is_number(acquire(LEASE, "c"))         -- a single try: the earliest expiry, never queued
    assert.equal(0, r:call("EXISTS", WAITERS))
  end)

  it("queues waiters in arrival order, once each; the first is told so, with the earliest expiry", function()
    r:call("SET", SEM, "1")
    assert.same({ "held" }, acquire(LEASE, "held"))
    local rep = acquire_t(A, "a1")
    assert.is_true(first_in_queue(rep))
    assert.is_true(rep[2] > 0 and rep[2] <= LEASE, "bound " .. tostring(rep[2]))
    assert.equal(NIL, acquire_t(B, "b1", "b2"))
    assert.equal(NIL, acquire_t(C, "c1"))
    assert.is_true(first_in_queue(acquire_t(-A, "a1")))   -- queued already: stays first, once
    assert.equal(NIL, acquire_t(-B, "b1", "b2"))
    assert.same({ entry(A, 1), entry(B, 2), entry(C, 1) }, queue())
    assert.is_true(r:call("PTTL", WAITERS) > 0, "the queue expires when nobody comes any more")
  end)

  it("the first waiter with no permit that expires by itself is told -1", function()
    r:call("SET", SEM, "0")
    assert.same({ -1, -1 }, acquire_t(A, "a1"))
  end)

  it("a release reserves the permits for the first waiter, grants it alone, then publishes the count", function()
    r:call("SET", SEM, "1")
    acquire(LEASE, "held")
    acquire_t(A, "a1")
    acquire_t(B, "b1")
    r:published()
    assert.equal(1, release("held"))
    assert.equal("1", count())                    -- a reservation moves no permit
    assert.equal(entry(A, 1), r:call("GET", GRANT))
    sa.assert_pttl(r, GRANT, CLAIM, 1)
    assert.same({ entry(B, 1) }, queue())
    -- Redisson's waiters (on redisson_sc:{name}) still hear the count
    assert.same({ { channel = wake(A), message = grant_msg(A) }, { channel = CHANNEL, message = "1" } },
      r:published())
  end)

  it("other acquirers see the count less the reservation; only the grantee takes it", function()
    r:call("SET", SEM, "1")
    acquire(LEASE, "held")
    acquire_t(A, "a1")
    release("held")
    r:published()
    local before = sa.snapshot(r, { SEM, TIMEOUTS, GRANT })
    local single = acquire(LEASE, "x")
    assert.is_true(single > 0 and single <= CLAIM, "a single try: the reservation's PTTL, got " .. tostring(single))
    assert.equal(-3, acquire_t(B, "b1"))          -- first behind the reservation: after its window
    assert.equal(NIL, acquire_t(C, "c1"))
    sa.assert_unchanged(r, before)
    assert.same({ entry(B, 1), entry(C, 1) }, queue())
    assert.same({ "a1" }, acquire_t(-A, "a1"))    -- the grantee claims
    assert.equal("0", count())
    assert.is_number(expiry("a1"))
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.same({ entry(B, 1), entry(C, 1) }, queue())
  end)

  it("grants in order a head at a time; the grantee's claim grants the next (the chain)", function()
    r:call("SET", SEM, "4")
    assert.same({ "h1", "h2", "h3", "h4" }, acquire(LEASE, "h1", "h2", "h3", "h4"))
    acquire_t(A, "a1")
    acquire_t(B, "b1", "b2")
    acquire_t(C, "c1")
    acquire_t(D, "d1", "d2", "d3", "d4", "d5")
    r:published()
    assert.equal(4, release("h1", "h2", "h3", "h4"))
    assert.equal(entry(A, 1), r:call("GET", GRANT))
    assert.same({ { channel = wake(A), message = grant_msg(A) }, { channel = CHANNEL, message = "4" } },
      r:published())
    assert.same({ "a1" }, acquire_t(-A, "a1"))    -- claims 1 and grants B its 2 (3 left)
    assert.equal(entry(B, 2), r:call("GET", GRANT))
    assert.same({ { channel = wake(B), message = grant_msg(B) } }, r:published())
    assert.same({ "b1", "b2" }, acquire_t(-B, "b1", "b2"))
    assert.equal(entry(C, 1), r:call("GET", GRANT))
    assert.same({ "c1" }, acquire_t(-C, "c1"))    -- the last; D wants 5: nobody granted
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.equal("0", count())
    assert.same({ entry(D, 5) }, queue())
    assert.same({ { channel = wake(C), message = grant_msg(C) } }, r:published())
  end)

  it("add_permits grants the first waiter it covers, then publishes", function()
    r:call("SET", SEM, "0")
    acquire_t(A, "a1", "a2")
    acquire_t(B, "b1")
    r:published()
    assert.equal(1, add(1))
    assert.equal(0, r:call("EXISTS", GRANT))      -- A wants 2: first come, first served
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
    assert.equal(2, add(1))
    assert.equal(entry(A, 2), r:call("GET", GRANT))
    assert.same({ { channel = wake(A), message = grant_msg(A) }, { channel = CHANNEL, message = "2" } },
      r:published())
    assert.equal(2, add(0))                       -- no rise: nothing granted or published
    assert.same({}, r:published())
  end)

  it("an expiry reclaim grants the first waiter the reclaimed permits cover", function()
    r:call("SET", SEM, "0")
    acquire_t(A, "a1")
    acquire_t(B, "b1")
    add_expired_permit("old")
    r:published()
    local rep = acquire(LEASE, "x1", "x2")        -- a single try of 2: reclaims 1 for A, takes nothing
    assert.is_true(rep > 0 and rep <= CLAIM, "the reservation's PTTL, got " .. tostring(rep))
    assert.equal("1", count())
    assert.equal(entry(A, 1), r:call("GET", GRANT))
    assert.same({ { channel = wake(A), message = grant_msg(A) }, { channel = CHANNEL, message = "1" } },
      r:published())
    assert.same({ "a1" }, acquire_t(-A, "a1"))
    assert.same({ entry(B, 1) }, queue())
  end)

  it("a queued waiter behind the first that reclaims an expired permit leaves it to the first", function()
    r:call("SET", SEM, "0")
    acquire_t(A, "a1")
    acquire_t(B, "b1")
    add_expired_permit("old")
    r:published()
    assert.equal(-3, acquire_t(-B, "b1"))         -- its keepalive attempt: the expiry serves A;
                                                  -- B is first now, behind A's reservation
    assert.equal(entry(A, 1), r:call("GET", GRANT))
    assert.same({ entry(B, 1) }, queue())
    assert.same({ { channel = wake(A), message = grant_msg(A) }, { channel = CHANNEL, message = "1" } },
      r:published())
    assert.same({ "a1" }, acquire_t(-A, "a1"))
  end)

  it("the first waiter that reclaims expired permits takes them, and the rest go to the next", function()
    r:call("SET", SEM, "0")
    acquire_t(A, "a1")
    acquire_t(B, "b1")
    add_expired_permit("old1")
    add_expired_permit("old2")
    r:published()
    assert.same({ "a1" }, acquire_t(-A, "a1"))    -- its bound ran out: it attempts, reclaims 2
    assert.equal(entry(B, 1), r:call("GET", GRANT))
    assert.same({ { channel = wake(B), message = grant_msg(B) }, { channel = CHANNEL, message = "1" } },
      r:published())
  end)

  it("skips a waiter whose wake channel nobody hears (its client is gone) and grants the next", function()
    r:ssubscribe(wake(B))                         -- sharded: only B's client still listens
    r:ssubscribe(CHANNEL)
    r:call("SET", SEM, "1")
    acquire(LEASE, "held")
    acquire_t(A, "a1")
    acquire_t(B, "b1")
    acquire_t(C, "c1")
    r:published()
    PUB = "spublish"
    assert.equal(1, release("held"))
    PUB = "publish"
    assert.equal(entry(B, 1), r:call("GET", GRANT))
    assert.same({ entry(C, 1) }, queue())
    local got = {}
    for _, p in ipairs(r:published()) do
      if p.channel ~= wake(A) then got[#got + 1] = { channel = p.channel, message = p.message } end
    end
    assert.same({ { channel = wake(B), message = grant_msg(B) }, { channel = CHANNEL, message = "1" } }, got)
  end)

  it("a grantee whose permits went meanwhile (a Redisson client) queues again at the tail", function()
    r:call("SET", SEM, "1")
    acquire(LEASE, "held")
    acquire_t(A, "a1")
    acquire_t(B, "b1")
    release("held")
    r:call("DECRBY", SEM, "1")                    -- Redisson's tryAcquire ignores the reservation
    assert.is_true(first_in_queue(acquire_t(-A, "a1")))  -- told to listen on the channel as well
    assert.same({ entry(B, 1), entry(A, 1) }, queue())
    assert.equal(0, r:call("EXISTS", GRANT))
  end)

  it("semaphore/cancel takes a waiter out and passes its unclaimed reservation on", function()
    r:call("SET", SEM, "1")
    acquire(LEASE, "held")
    acquire_t(A, "a1")
    acquire_t(B, "b1")
    acquire_t(C, "c1")
    assert.equal(1, cancel(B, 1))
    assert.same({ entry(A, 1), entry(C, 1) }, queue())
    release("held")
    r:published()
    assert.equal(2, cancel(A, 1))
    assert.equal(entry(C, 1), r:call("GET", GRANT))
    assert.same({ { channel = wake(C), message = grant_msg(C) } }, r:published())
    assert.same({ "c1" }, acquire_t(-C, "c1"))
    assert.equal(0, r:call("EXISTS", WAITERS, GRANT))
  end)

  it("refuses a waiters or grant key of another type, changing nothing", function()
    r:call("SET", SEM, "1")
    acquire(LEASE, "held")
    add_expired_permit("old")
    for _, setup in ipairs({ { WAITERS, { "SET", "%s", "x" } }, { GRANT, { "HSET", "%s", "f", "v" } } }) do
      r:call("DEL", WAITERS, GRANT)
      sa.make(r, setup[2], setup[1])
      local before = sa.snapshot(r, { SEM, TIMEOUTS, WAITERS, GRANT })
      sa.assert_error(acquire_t(A, "a1"), "RLK_WRONGTYPE")
      sa.assert_error(acquire(LEASE, "a1"), "RLK_WRONGTYPE")
      sa.assert_error(release("held"), "RLK_WRONGTYPE")
      sa.assert_error(add(1), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
  end)

  -- What the usual calls cost the server, command by command (sa.count_commands): no key's type
  -- is read by TYPE (a key of another type fails a redis.pcall read, which sends the call on to
  -- the general case); the queue is not read by the single try of a semaphore of one permit, and
  -- the release reads grant and queue by one EXISTS.
  it("the usual single try runs 7 commands and the usual release 7, no TYPE", function()
    r:call("SET", SEM, "1")
    local rep, counts, total = sa.count_commands(r, function() return acquire(LEASE, "u1") end)
    assert.same({ "u1" }, rep)
    assert.is_nil(counts.type)
    assert.is_nil(counts.lindex)
    assert.equal(7, total)
    rep, counts, total = sa.count_commands(r, function() return release("u1") end)
    assert.equal(1, rep)
    assert.is_nil(counts.type)
    assert.equal(1, counts.exists)
    assert.equal(7, total)
    assert.equal("1", r:call("GET", SEM))
    -- A release that serves a waiter goes on at once: the count is read once, the EXISTS added.
    acquire(LEASE, "u2")
    acquire_t(A, "a1")
    rep, counts = sa.count_commands(r, function() return release("u2") end)
    assert.equal(1, rep)
    assert.equal(1, counts.exists)
    assert.equal(2, counts.get)                   -- the count and the reservation, once each
    assert.equal(entry(A, 1), r:call("GET", GRANT))
  end)

  it("the usual single try refuses an id held already, changing nothing", function()
    r:call("SET", SEM, "2")
    assert.same({ "live" }, acquire(LEASE, "live"))
    local before = sa.snapshot(r, { SEM, TIMEOUTS, WAITERS, GRANT })
    sa.assert_error(acquire(LEASE * 2, "live"), "RLK_HELD")   -- a new score would show
    sa.assert_unchanged(r, before)
  end)

  it("a single try that leaves permits over grants them to the first waiter they cover", function()
    r:call("SET", SEM, "0")
    assert.same({ -1, -1 }, acquire_t(A, "a1", "a2"))
    r:call("SET", SEM, "3")                       -- raised by hand: nobody granted A
    r:published()
    assert.same({ "x" }, acquire(LEASE, "x"))
    assert.equal("2", count())
    assert.equal(entry(A, 2), r:call("GET", GRANT))
    assert.same({ { channel = wake(A), message = grant_msg(A) } }, r:published())
  end)

  it("a waiters key of another type is refused only by the calls that read the queue", function()
    r:call("SET", SEM, "1")
    r:call("SET", WAITERS, "x")
    assert.same({ "u1" }, acquire(LEASE, "u1"))     -- takes the one permit: no queue read
    assert.equal("x", r:call("GET", WAITERS))
    local before = sa.snapshot(r, { SEM, TIMEOUTS, WAITERS, GRANT })
    sa.assert_error(release("u1"), "RLK_WRONGTYPE")  -- a rise serves the queue: it reads it
    sa.assert_error(acquire_t(A, "a1"), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
  end)

  sa.publish_cases(r, { SEM, TIMEOUTS, WAITERS, GRANT }, function()
    r:call("SET", SEM, "2")
    acquire(LEASE, "h1", "h2")
    acquire_t(A, "a1")
    acquire_t(B, "b1")
    release("h1", "h2")
  end, with_pub(function() return acquire_t(-A, "a1") end), { wake(B) })   -- the chain's grant
end)

-- Redisson 4.7's newer RPermitExpirableSemaphore calls: getLeaseTime, acquiredPermits,
-- setPermits, and RExpirable's expire(Duration), clearExpire(), remainTimeToLive().
local function lease_time(id) return r:script("psemaphore/lease_time", KEYS, { id, PUB }) end
local function acquired() return r:script("psemaphore/acquired", KEYS, { PUB }) end
local function set_permits(n)
  return r:script("psemaphore/set_permits", QKEYS, { tostring(n), tostring(CLAIM), PUB })
end
local function expire(ttl) return r:script("psemaphore/expire", { SEM, TIMEOUTS }, { tostring(ttl) }) end
local function clear_expire() return r:script("psemaphore/clear_expire", { SEM, TIMEOUTS }, {}) end
local function ttl() return r:script("psemaphore/ttl", { SEM }, {}) end

describe("psemaphore/lease_time", function()
  before_each(function()
    assert.equal(1, try_set(2))
    assert.same({ "a" }, acquire(LEASE, "a"))
    r:published()
  end)

  it("replies the ms left of a held permit's lease, changing nothing", function()
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    local t0 = server_ms()
    local left = lease_time("a")
    assert_between(expiry("a") - server_ms(), expiry("a") - t0, left, "lease left")
    assert.is_true(left >= 1 and left <= LEASE)
    sa.assert_unchanged(r, before)
  end)

  it("replies -1 for a permit Redisson took without a lease", function()
    r:call("ZADD", TIMEOUTS, NON_EXPIRABLE, "forever")
    assert.equal(-1, lease_time("forever"))
  end)

  it("replies 0 for an unknown or released id, changing nothing", function()
    assert.equal(1, release("a"))
    r:published()
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    assert.equal(0, lease_time("a"))
    assert.equal(0, lease_time("never"))
    sa.assert_unchanged(r, before)
  end)

  it("replies 0 for an expired id, reclaiming it (count + 1, published)", function()
    add_expired_permit("old")
    assert.equal(0, lease_time("old"))
    assert.is_nil(expiry("old"))
    assert.equal("2", count())
    assert.same({ { channel = CHANNEL, message = "2" } }, r:published())
  end)

  it_virtual("counts down with the server's clock to the permit's expiry", function()
    assert.equal(LEASE, lease_time("a"))
    r:advance(LEASE - 1)
    assert.equal(1, lease_time("a"))
    r:advance(1)
    assert.equal(0, lease_time("a"))
    assert.equal("2", count())
  end)

  it("refuses a bad id, publish command, argument count and wrong types, changing nothing", function()
    assert_refused_each("RLK_BADARG", { function() return lease_time("") end,
                                        function() return lease_time(string.rep("x", 1025)) end })
    assert_refused_each("RLK_BADARG", script_calls("psemaphore/lease_time", {
      { KEYS, { "a" } }, { { SEM, TIMEOUTS }, { "a", "publish" } }, { KEYS, { "a", "publish", "x" } } }))
    assert_refused_each("RLK_BADPUBLISH", { function()
      return r:script("psemaphore/lease_time", KEYS, { "live", "spublish!" }) end })
  end)
  wrongtype_cases(function() return lease_time("a") end)
end)

describe("psemaphore/acquired", function()
  it("counts the held permits after reclaiming expired ones (count + expired, published)", function()
    assert.equal(1, try_set(3))
    assert.same({ "a" }, acquire(LEASE, "a"))
    assert.same({ "b" }, acquire(LEASE, "b"))
    add_expired_permit("old")
    r:published()
    assert.equal(2, acquired())
    assert.is_nil(expiry("old"))
    assert.equal("2", count())
    assert.same({ { channel = CHANNEL, message = "2" } }, r:published())
  end)

  it("replies 0 for a semaphore that does not exist, creating nothing", function()
    assert.equal(0, acquired())
    assert.equal(0, r:call("EXISTS", SEM))
    assert.equal(0, r:call("EXISTS", TIMEOUTS))
  end)

  it("refuses a bad publish command and argument count, changing nothing", function()
    assert_refused_each("RLK_BADPUBLISH", { function() return r:script("psemaphore/acquired", KEYS, { "x" }) end })
    assert_refused_each("RLK_BADARG", script_calls("psemaphore/acquired", {
      { KEYS, {} }, { { SEM, TIMEOUTS }, { "publish" } }, { KEYS, { "publish", "x" } } }))
  end)
  wrongtype_cases(acquired)
end)

describe("psemaphore/set_permits", function()
  it("sets a missing semaphore's count, publishes it and replies it", function()
    assert.equal(4, set_permits(4))
    assert.equal("4", count())
    assert.same({ { channel = CHANNEL, message = "4" } }, r:published())
  end)

  it("creates a count of 0 for a missing semaphore and publishes nothing", function()
    assert.equal(0, set_permits(0))
    assert.equal("0", count())
    assert.same({}, r:published())
  end)

  it("makes count + held the new size: a rise adds to the count and publishes", function()
    assert.equal(1, try_set(3))
    assert.same({ "a" }, acquire(LEASE, "a"))
    r:published()
    assert.equal(4, set_permits(5))
    assert.equal("4", count())
    assert.same({ { channel = CHANNEL, message = "4" } }, r:published())
  end)

  it("a fall below the held permits leaves a negative count and publishes nothing; releases bring it back", function()
    assert.equal(1, try_set(3))
    assert.same({ "a", "b" }, acquire(LEASE, "a", "b"))
    r:published()
    assert.equal(-1, set_permits(1))
    assert.equal("-1", count())
    assert.same({}, r:published())
    assert.equal(2, release("a", "b"))
    assert.equal("1", count())
  end)

  it("the same size changes nothing but keeps the key's TTL", function()
    r:call("SET", SEM, "2", "PX", "600000")
    r:published()
    local before = sa.snapshot(r, { SEM, TIMEOUTS })
    assert.equal(2, set_permits(2))
    sa.assert_unchanged(r, before)
  end)

  it("reclaims expired permits first: they count as available, not held", function()
    assert.equal(1, try_set(1))
    add_expired_permit("old")    -- goes back to the count: 2 available, none held, so 3 - 0
    r:published()
    assert.equal(3, set_permits(3))
    assert.is_nil(expiry("old"))
    assert.equal("3", count())
  end)

  it("a rise grants the first queued waiter it covers, as add_permits does", function()
    assert.equal(1, try_set(0))
    r:call("RPUSH", WAITERS, "33554433 2")
    assert.equal(2, set_permits(2))
    assert.equal("33554433 2", r:call("GET", GRANT))
  end)

  it("refuses permits out of range, a bad claim window or publish command, changing nothing", function()
    local calls = each_value(BAD_PERMITS, set_permits)
    calls[#calls + 1] = function() return r:script("psemaphore/set_permits", QKEYS, { "1", "0", "publish" }) end
    calls[#calls + 1] = function() return r:script("psemaphore/set_permits", KEYS, { "1", "50", "publish" }) end
    assert_refused_each("RLK_BADARG", calls)
    assert_refused_each("RLK_BADPUBLISH", { function()
      return r:script("psemaphore/set_permits", QKEYS, { "1", "50", "PUBLISH" }) end })
  end)
  wrongtype_cases(function() return set_permits(3) end)
end)

describe("psemaphore/expire, clear_expire, ttl", function()
  it("sets the TTL on both keys, as Redisson does, and replies 1", function()
    assert.equal(1, try_set(2))
    assert.same({ "a" }, acquire(LEASE, "a"))
    assert.equal(-1, ttl())
    assert.equal(1, expire(60000))
    sa.assert_pttl(r, SEM, 60000, 60000 - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, TIMEOUTS, 60000, 60000 - sa.TTL_SLACK_MS)
    local left = ttl()
    assert.is_true(left > 60000 - sa.TTL_SLACK_MS and left <= 60000)
  end)

  it("a later acquire keeps the permits key's TTL in step with the count's", function()
    assert.equal(1, try_set(2))
    assert.equal(1, expire(60000))
    assert.same({ "a" }, acquire(LEASE, "a"))
    sa.assert_pttl(r, TIMEOUTS, 60000, 60000 - sa.TTL_SLACK_MS)
  end)

  it("clear_expire removes both TTLs (1), then finds none (0)", function()
    assert.equal(1, try_set(2))
    assert.same({ "a" }, acquire(LEASE, "a"))
    assert.equal(1, expire(60000))
    assert.equal(1, clear_expire())
    assert.equal(-1, r:call("PTTL", SEM))
    assert.equal(-1, r:call("PTTL", TIMEOUTS))
    assert.equal(0, clear_expire())
  end)

  it("replies 0 / -2 when there is no semaphore, creating nothing", function()
    assert.equal(0, expire(60000))
    assert.equal(0, clear_expire())
    assert.equal(-2, ttl())
    assert.equal(0, r:call("EXISTS", SEM))
    assert.equal(0, r:call("EXISTS", TIMEOUTS))
  end)

  it_virtual("the semaphore and its held permits vanish when the TTL runs out", function()
    assert.equal(1, try_set(2))
    assert.same({ "a" }, acquire(LEASE, "a"))
    assert.equal(1, expire(1000))
    r:advance(1001)
    assert.equal(-2, ttl())
    assert.equal(0, r:call("EXISTS", TIMEOUTS))
    assert.equal(0, release("a"))
  end)

  it("refuses a bad TTL and argument counts, changing nothing", function()
    assert_refused_each("RLK_BADLEASE", each_value({ "0", "-1", "01", "1.5", "", "1000000000001" }, expire))
    assert_refused_each("RLK_BADARG", script_calls("psemaphore/expire", {
      { { SEM }, { "1000" } }, { { SEM, TIMEOUTS }, {} }, { { SEM, TIMEOUTS }, { "1000", "x" } } }))
    assert_refused_each("RLK_BADARG", script_calls("psemaphore/clear_expire", {
      { { SEM }, {} }, { { SEM, TIMEOUTS }, { "x" } } }))
    assert_refused_each("RLK_BADARG", script_calls("psemaphore/ttl", { { {}, {} }, { { SEM }, { "x" } } }))
  end)

  it("refuses keys of another type with RLK_WRONGTYPE, changing nothing", function()
    for _, setup in ipairs({ { SEM, { "RPUSH", "%s", "a" } }, { TIMEOUTS, { "SET", "%s", "1" } } }) do
      r:call("DEL", SEM, TIMEOUTS)
      sa.make(r, setup[2], setup[1])
      local before = sa.snapshot(r, { SEM, TIMEOUTS })
      sa.assert_error(expire(60000), "RLK_WRONGTYPE")
      sa.assert_error(clear_expire(), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
    r:call("DEL", SEM, TIMEOUTS)
    r:call("RPUSH", SEM, "a")
    sa.assert_error(ttl(), "RLK_WRONGTYPE")
  end)
end)
