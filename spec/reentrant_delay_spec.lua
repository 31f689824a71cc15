-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of the reentrant lock's lock-delay (scripts/reentrant/*.lua with the delay key
-- {name}:rlk_delay) on the backend RLK_BACKEND picks (mock or a real redis-server): a lock whose
-- lease ran out stays free for the delay, a released one does not; without the delay key the
-- scripts touch no key and send no command more than before. The timelines need the mock's
-- virtual clock; the rest also runs against real Redis.
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local helpers = require("support.helpers")
local sa = require("script_asserts")

local NIL = backend.NIL
local LOCK, CHANNEL = "{dl}", "redisson_lock__channel:{dl}"
local WAITERS, GRANT, DELAY = "{dl}:rlk_waiters", "{dl}:rlk_next", "{dl}:rlk_delay"
local A, B = "5c1d-uuid-a:1", "5c1d-uuid-b:2"
local it_virtual = helpers.it_virtual

local r = backend.new()

-- delay: the lock-delay in ms (nil: without the delay key, as a client without the option).
local function acquire(owner, lease, delay, ticket)
  if delay then
    return r:script("reentrant/acquire", { LOCK, WAITERS, GRANT, DELAY },
      { tostring(lease), owner, tostring(ticket or 0), tostring(delay) })
  end
  return r:script("reentrant/acquire", { LOCK, WAITERS, GRANT },
    { tostring(lease), owner, tostring(ticket or 0) })
end
local function release(owner, lease, with_delay)
  local keys = { LOCK, CHANNEL, WAITERS, GRANT }
  if with_delay then keys[5] = DELAY end
  return r:script("reentrant/release", keys, { owner, tostring(lease), "50", "publish" })
end
local function renew(owner, lease, with_delay)
  return r:script("reentrant/renew", with_delay and { LOCK, DELAY } or { LOCK },
    { tostring(lease), owner })
end
local function force(with_delay)
  local keys = with_delay and { LOCK, CHANNEL, DELAY } or { LOCK, CHANNEL }
  return r:script("reentrant/force_release", keys, { "publish" })
end

before_each(function()
  r:call("DEL", LOCK, WAITERS, GRANT, DELAY)
  r:published()
end)

describe("reentrant lock-delay", function()
  it("a take writes the delay key: value the delay, PX lease + delay", function()
    assert.equal(NIL, acquire(A, 10000, 5000))
    assert.equal("5000", r:call("GET", DELAY))
    sa.assert_pttl(r, DELAY, 15000, 10000)
    sa.assert_pttl(r, LOCK, 10000, 10000 - sa.TTL_SLACK_MS)
  end)

  it("without the delay key nothing more is written (a Redisson-shaped lock)", function()
    assert.equal(NIL, acquire(A, 10000))
    assert.equal(0, r:call("EXISTS", DELAY))
    assert.equal(NIL, acquire(A, 10000))
    assert.equal(0, release(A, 10000))
    assert.equal(1, renew(A, 10000))
    assert.equal(0, r:call("EXISTS", DELAY))
    assert.equal(1, release(A, 10000))
    assert.equal(0, r:call("EXISTS", DELAY))
  end)

  it("refuses a free lock while the delay key is there, with its PTTL, and changes nothing", function()
    r:call("SET", DELAY, "3000", "PX", "3000")
    local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, DELAY })
    local rep = acquire(B, 10000, 3000)
    assert.is_table(rep)
    assert.equal(3, #rep)
    assert.is_true(rep[1] > 0 and rep[1] <= 3000, "wait " .. tostring(rep[1]))
    assert.same({ 0, 1 }, { rep[2], rep[3] })   -- not queued (a single try); the delay said so
    sa.assert_unchanged(r, before)
  end)

  it("a refusal by a holder is not marked as the delay's", function()
    assert.equal(NIL, acquire(A, 10000, 3000))
    local wait = acquire(B, 10000, 3000)
    assert.is_number(wait)
    assert.is_true(wait > 0 and wait <= 10000, "wait " .. tostring(wait))
  end)

  it("a waiter held off by the delay queues and is told it is first", function()
    r:call("SET", DELAY, "3000", "PX", "3000")
    local rep = acquire(B, 10000, 3000, 33554443)
    assert.is_table(rep)
    assert.same({ 1, 1 }, { rep[2], rep[3] })
    assert.is_true(rep[1] > 0 and rep[1] <= 3000)
    assert.same({ "33554443" }, r:call("LRANGE", WAITERS, 0, -1))
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  it("a client without the option ignores the delay key (as Redisson's do)", function()
    r:call("SET", DELAY, "3000", "PX", "3000")
    assert.equal(NIL, acquire(B, 10000))
    assert.equal("1", r:call("HGET", LOCK, B))
  end)

  it("re-entry and a release that leaves a hold refresh the delay key", function()
    assert.equal(NIL, acquire(A, 1000, 5000))
    assert.equal(NIL, acquire(A, 60000, 5000))
    sa.assert_pttl(r, DELAY, 65000, 60000)
    assert.equal(0, release(A, 90000, true))
    sa.assert_pttl(r, DELAY, 95000, 90000)
    assert.equal("5000", r:call("GET", DELAY))
  end)

  it("a renewal refreshes the delay key; another owner's renews nothing", function()
    assert.equal(NIL, acquire(A, 1000, 5000))
    assert.equal(1, renew(A, 60000, true))
    sa.assert_pttl(r, DELAY, 65000, 60000)
    sa.assert_pttl(r, LOCK, 60000, 60000 - sa.TTL_SLACK_MS)
    local before = sa.snapshot(r, { LOCK, DELAY })
    assert.equal(0, renew(B, 90000, true))
    sa.assert_unchanged(r, before)
  end)

  it("a renewal leaves a delay key of another type alone and still renews the lock", function()
    assert.equal(NIL, acquire(A, 1000))
    r:call("RPUSH", DELAY, "x")
    assert.equal(1, renew(A, 60000, true))
    sa.assert_pttl(r, LOCK, 60000, 60000 - sa.TTL_SLACK_MS)
    assert.equal("list", r:call("TYPE", DELAY).ok)
  end)

  it("the last release deletes the delay key: the lock is free at once", function()
    assert.equal(NIL, acquire(A, 10000, 5000))
    assert.equal(1, release(A, 10000, true))
    assert.equal(0, r:call("EXISTS", LOCK, DELAY))
    assert.equal(NIL, acquire(B, 10000, 5000))
  end)

  it("a release that leaves a hold refuses a delay key of another type before any write", function()
    assert.equal(NIL, acquire(A, 10000))
    assert.equal(NIL, acquire(A, 10000))
    r:call("RPUSH", DELAY, "x")
    local before = sa.snapshot(r, { LOCK, DELAY })
    sa.assert_error(release(A, 10000, true), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
  end)

  it("a force unlock deletes lock and delay key; with no lock it ends a delay and publishes", function()
    assert.equal(NIL, acquire(A, 10000, 5000))
    assert.equal(1, force(true))
    assert.equal(0, r:call("EXISTS", LOCK, DELAY))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    r:call("SET", DELAY, "3000", "PX", "3000")
    assert.equal(2, force(true))
    assert.equal(0, r:call("EXISTS", DELAY))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    assert.equal(0, force(true))
    assert.same({}, r:published())
    -- Without the delay key: the delay stays (the call is the one before lock-delay).
    r:call("SET", DELAY, "3000", "PX", "3000")
    assert.equal(0, force(false))
    assert.equal(1, r:call("EXISTS", DELAY))
  end)

  it("refuses a bad delay or mismatched counts without changing anything", function()
    for _, d in ipairs(sa.BAD_LEASES) do
      local before = sa.snapshot(r, { LOCK, DELAY })
      sa.assert_error(r:script("reentrant/acquire", { LOCK, WAITERS, GRANT, DELAY },
        { "1000", A, "0", d }), "RLK_BADARG")
      sa.assert_unchanged(r, before)
    end
    for _, case in ipairs({ { { LOCK, WAITERS, GRANT, DELAY }, { "1000", A, "0" } },
                            { { LOCK, WAITERS, GRANT }, { "1000", A, "0", "5000" } },
                            { { LOCK, WAITERS, GRANT, DELAY, "{dl}:x" },
                              { "1000", A, "0", "5000", "1" } } }) do
      local before = sa.snapshot(r, { LOCK, DELAY })
      sa.assert_error(r:script("reentrant/acquire", case[1], case[2]), "RLK_BADARG")
      sa.assert_unchanged(r, before)
    end
  end)

  it_virtual("a lost lock (lease ran out) stays free for the delay; then the next takes it", function()
    assert.equal(NIL, acquire(A, 1000, 3000))
    r:advance(1001)
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({ 2999, 0, 1 }, acquire(B, 1000, 3000))
    r:advance(2998)
    assert.same({ 1, 0, 1 }, acquire(B, 1000, 3000))
    r:advance(2)
    assert.equal(NIL, acquire(B, 1000, 3000))
  end)

  it_virtual("control: without the delay the next takes the lock right at lease end", function()
    assert.equal(NIL, acquire(A, 1000))
    r:advance(1001)
    assert.equal(NIL, acquire(B, 1000))
  end)

  it_virtual("renewals keep the delay running past the lock's end by the delay", function()
    assert.equal(NIL, acquire(A, 1000, 3000))
    for _ = 1, 5 do
      r:advance(600)
      assert.equal(1, renew(A, 1000, true))
    end
    r:advance(1001)
    assert.is_table(acquire(B, 1000, 3000))
    r:advance(3000)
    assert.equal(NIL, acquire(B, 1000, 3000))
  end)

  it_virtual("a released lock is taken at once, within what would have been the delay", function()
    assert.equal(NIL, acquire(A, 1000, 3000))
    r:advance(500)
    assert.equal(1, release(A, 1000, true))
    assert.equal(NIL, acquire(B, 1000, 3000))
  end)
end)

describe("reentrant/renew_many with lock-delay keys", function()
  local L2, D2 = "{dl}:2", "{dl}:2:rlk_delay"
  local function renew_many(keys, args) return r:script("reentrant/renew_many", keys, args) end

  before_each(function()
    r:call("DEL", L2, D2)
  end)

  it("renews each lock, and the delay key after it to lease + delay, in one call", function()
    assert.equal(NIL, acquire(A, 1000, 5000))
    assert.equal(NIL, r:script("reentrant/acquire", { L2, WAITERS, GRANT, D2 },
      { "1000", B, "0", "7000" }))
    assert.same({ 1, 1 }, renew_many({ LOCK, DELAY, L2, D2 }, { "60000", A, "", B, "" }))
    sa.assert_pttl(r, LOCK, 60000, 60000 - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, DELAY, 65000, 60000)
    sa.assert_pttl(r, L2, 60000, 60000 - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, D2, 67000, 60000)
  end)

  it("mixes locks with and without a delay key; a lock not held keeps its delay key as it is", function()
    assert.equal(NIL, acquire(A, 1000, 5000))
    r:call("HSET", L2, B, "1")
    r:call("SET", D2, "7000", "PX", "2000")
    assert.same({ 0, 1, 0 }, renew_many({ "{dl}:3", LOCK, DELAY, L2, D2 }, { "60000", A, A, "", A, "" }))
    sa.assert_pttl(r, DELAY, 65000, 60000)
    sa.assert_pttl(r, D2, 2000)
    assert.equal(-1, r:call("PTTL", L2))
  end)

  it("a delay key of another type is left alone; its lock is renewed", function()
    assert.equal(NIL, acquire(A, 1000))
    r:call("RPUSH", DELAY, "x")
    assert.same({ 1 }, renew_many({ LOCK, DELAY }, { "60000", A, "" }))
    sa.assert_pttl(r, LOCK, 60000, 60000 - sa.TTL_SLACK_MS)
    assert.equal("list", r:call("TYPE", DELAY).ok)
  end)

  it("an empty owner that is not a delay key's is refused, and nothing changes", function()
    assert.equal(NIL, acquire(A, 1000, 5000))
    for _, case in ipairs({
      { { LOCK, L2 }, { "60000", A, "" } },                  -- not the delay key's name
      { { DELAY, LOCK }, { "60000", "", A } },               -- nothing before it
      { { LOCK, DELAY, DELAY }, { "60000", A, "", "" } },    -- after a delay key
      { { LOCK, DELAY }, { "60000", "" } },                  -- the one-owner form
    }) do
      local before = sa.snapshot(r, { LOCK, DELAY, L2 })
      sa.assert_error(renew_many(case[1], case[2]), "RLK_BADOWNER")
      sa.assert_unchanged(r, before)
    end
  end)
end)
