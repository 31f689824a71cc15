-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/reentrant/*.lua on the backend RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local helpers = require("support.helpers")
local sa = require("script_asserts")

local NIL = backend.NIL
local LOCK, CHANNEL = "{res}", "redisson_lock__channel:{res}"
local WAITERS, GRANT = "{res}:rlk_waiters", "{res}:rlk_next"
local CLAIM = 5000   -- a grant outlives a busy machine's pause between two steps on a real server
local A, B = "1b9e7c2a-uuid-a:1", "1b9e7c2a-uuid-b:7"
local LEASE = 30000
local it_virtual = helpers.it_virtual

local r = backend.new()

local function acquire(owner, lease, key, ticket)
  return r:script("reentrant/acquire", { key or LOCK, WAITERS, GRANT },
    { tostring(lease or LEASE), owner, tostring(ticket or 0) })
end
local function release(owner, lease, key, pub)
  return r:script("reentrant/release", { key or LOCK, CHANNEL, WAITERS, GRANT },
    { owner, tostring(lease or LEASE), tostring(CLAIM), pub or "publish" })
end
local function cancel(ticket, pub)
  return r:script("reentrant/cancel", { LOCK, CHANNEL, WAITERS, GRANT },
    { tostring(ticket), tostring(CLAIM), pub or "publish" })
end
local function renew(owner, lease, key)
  return r:script("reentrant/renew", { key or LOCK }, { tostring(lease or LEASE), owner })
end
local function count(owner, key) return r:call("HGET", key or LOCK, owner) end
-- The wake channel of ticket t: where a release grants the lock to it (its client listens there).
local function wake(t) return CHANNEL .. ":rlk:" .. string.format("%d", math.floor(t / 1024)) end
-- Tickets of clients with a wake channel are at least W = 2^25 (lib/hand_over); smaller ones are
-- granted on CHANNEL as before release v4 (a cluster with global pub/sub).
local W = 33554432
local function tk(n) return string.format("%d", W + n) end
-- A waiter's attempt that left it first in the queue: {wait, 1} (it also listens on CHANNEL).
local function first_in_queue(rep)
  return type(rep) == "table" and #rep == 2 and type(rep[1]) == "number" and rep[2] == 1
end

-- Every ARGV check of a script: bad leases, bad owners, wrong counts; each refused call leaves the
-- lock as it was. call(lease, owner) runs the script with those two arguments.
local function validation_cases(call, scripted)
  describe("refuses bad arguments without changing anything", function()
    before_each(function()
      assert.equal(NIL, acquire(A, 5000))
      r:published()
    end)

    it("a lease that is not an integer in 1..10^12", function()
      for _, lease in ipairs(sa.BAD_LEASES) do
        local before = sa.snapshot(r, { LOCK })
        sa.assert_error(call(lease, A), "RLK_BADLEASE")
        sa.assert_unchanged(r, before)
      end
    end)

    it("an empty owner or one longer than 1024 bytes", function()
      for _, owner in ipairs({ "", string.rep("x", 1025) }) do
        local before = sa.snapshot(r, { LOCK })
        sa.assert_error(call("60000", owner), "RLK_BADOWNER")
        sa.assert_unchanged(r, before)
      end
    end)

    it("the wrong number of keys or arguments", function()
      for _, case in ipairs(scripted) do
        local before = sa.snapshot(r, { LOCK, "{res}:other" })
        sa.assert_error(r:script(case[1], case[2], case[3]), "RLK_BADARG")
        sa.assert_unchanged(r, before)
      end
    end)
  end)
end

-- A key of another type: RLK_WRONGTYPE and the key untouched.
local function wrongtype_cases(call)
  it("refuses a lock key of another type with RLK_WRONGTYPE", function()
    local kinds = { { "SET", LOCK, "token", "PX", "60000" } }
    for _, k in ipairs({ "list", "set", "zset" }) do kinds[#kinds + 1] = sa.OTHER_TYPES[k] end
    for _, make in ipairs(kinds) do
      r:call("DEL", LOCK)
      sa.make(r, make, LOCK)
      local before = sa.snapshot(r, { LOCK })
      sa.assert_error(call(), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
  end)
end

before_each(function() r:reset() end)

describe("reentrant/acquire", function()
  it("takes a free lock: count 1, lease set", function()
    assert.equal(NIL, acquire(A))
    assert.equal("1", count(A))
    assert.same({ A, "1" }, r:call("HGETALL", LOCK))
    sa.assert_pttl(r, LOCK, LEASE, LEASE - sa.TTL_SLACK_MS)
  end)

  it("re-enters for the same owner: count + 1, TTL raised to a longer lease", function()
    assert.equal(NIL, acquire(A, 2000))
    assert.equal(NIL, acquire(A, 600000))
    assert.equal("2", count(A))
    sa.assert_pttl(r, LOCK, 600000, 600000 - sa.TTL_SLACK_MS)
    assert.equal(NIL, acquire(A))
    assert.equal("3", count(A))
  end)

  it("refuses another owner with the holder's PTTL and changes nothing", function()
    assert.equal(NIL, acquire(A, 20000))
    local before = sa.snapshot(r, { LOCK })
    local ttl = acquire(B, 600000)
    assert.is_number(ttl)
    assert.is_true(ttl > 0 and ttl <= 20000, "PTTL reply " .. ttl)
    assert.equal(NIL, count(B))
    sa.assert_unchanged(r, before)
  end)

  it("replies -1 when the holder's hash has no TTL", function()
    r:call("HSET", LOCK, B, "1")
    assert.equal(-1, acquire(A))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    assert.equal(-1, r:call("PTTL", LOCK))
  end)

  it("accepts the smallest and the largest lease", function()
    assert.equal(NIL, acquire(A, "1000000000000"))
    sa.assert_pttl(r, LOCK, 1000000000000, 1000000000000 - sa.TTL_SLACK_MS)
    assert.equal(NIL, acquire(A, "1"))                 -- a re-entry never shortens the hold
    sa.assert_pttl(r, LOCK, 1000000000000, 1000000000000 - sa.TTL_SLACK_MS)
    r:call("DEL", LOCK)
    assert.equal(NIL, acquire(A, "1"))
    assert.is_true(r:call("PTTL", LOCK) <= 1)
  end)

  it("accepts an owner of exactly 1024 bytes", function()
    local owner = string.rep("o", 1024)
    assert.equal(NIL, acquire(owner))
    assert.equal("1", count(owner))
  end)

  it_virtual("lets another owner in once the lease ran out", function()
    assert.equal(NIL, acquire(A, 1000))
    r:advance(999)
    assert.equal(1, acquire(B))
    r:advance(1)
    assert.equal(0, acquire(B)) -- PTTL 0: Redis keeps a key until its deadline has passed
    r:advance(1)
    assert.equal(NIL, acquire(B))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
  end)

  wrongtype_cases(function() return acquire(A) end)
  validation_cases(function(lease, owner) return acquire(owner, lease) end, {
    { "reentrant/acquire", {}, { "1000", A, "0" } },
    { "reentrant/acquire", { LOCK }, { "1000", A } },
    { "reentrant/acquire", { LOCK, WAITERS }, { "1000", A, "0" } },
    { "reentrant/acquire", { LOCK, WAITERS, GRANT, "{res}:rlk_delay" }, { "1000", A } },
    { "reentrant/acquire", { LOCK, WAITERS, GRANT }, { "1000", A, "0", "extra" } },
    { "reentrant/acquire", { LOCK, WAITERS, GRANT }, { "1000", A, "67108864" } },
    { "reentrant/acquire", { LOCK, WAITERS, GRANT }, { "1000", A, "1.5" } },
    { "reentrant/acquire", { LOCK, WAITERS, GRANT }, { "1000", A, " 7" } },
    { "reentrant/acquire", { LOCK, WAITERS, GRANT }, { "1000", A, "" } },
    { "reentrant/acquire", { LOCK, WAITERS, GRANT }, { "1000", A, "00" } },
    { "reentrant/acquire", { LOCK, WAITERS, GRANT }, { "1000", A, "0.0" } },
    { "reentrant/acquire", { LOCK, WAITERS, GRANT }, { "1000", A, "0x0" } },
    { "reentrant/acquire", { LOCK, WAITERS, GRANT }, { "1000", A, "+7" } },
    { "reentrant/acquire", { LOCK, WAITERS, GRANT }, { "1000", A, "-07" } },
  })

  -- The uncontended path (no lock, no reservation) is one EXISTS of both keys, HSET and PEXPIRE.
  it("takes a free, unreserved lock for a new waiter without queueing it", function()
    assert.equal(NIL, acquire(A, nil, nil, 11))
    assert.same({ A, "1" }, r:call("HGETALL", LOCK))
    sa.assert_pttl(r, LOCK, LEASE, 1)
    assert.equal(0, r:call("EXISTS", WAITERS))
    assert.equal(0, r:call("EXISTS", GRANT))
  end)

  it("does not take the fast path past a reservation of another type", function()
    r:call("HSET", GRANT, "f", "v")
    local before = sa.snapshot(r, { LOCK, GRANT })
    sa.assert_error(acquire(A), "RLK_WRONGTYPE")
    sa.assert_error(acquire(A, nil, nil, 11), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
  end)
end)

-- With several bad arguments the first in each script's order is named, and nothing changes:
-- acquire checks the lease, the owner, the ticket, then delay_ms; release the publish command,
-- the owner, the lease, then the claim window. Pinned for a fast path that checks its arguments
-- apart from the others.
describe("reentrant scripts name the first bad argument in a fixed order", function()
  local LONG = string.rep("x", 1025)
  local DELAY = "{res}:rlk_delay"
  before_each(function()
    assert.equal(NIL, acquire(A, 5000))
    r:published()
  end)

  it("acquire: lease, owner, ticket, delay_ms", function()
    local cases = {
      { { "0", "", "x" }, "RLK_BADLEASE" },
      { { "1e3", LONG, "0" }, "RLK_BADLEASE" },
      { { "1000", "", "x" }, "RLK_BADOWNER" },
      { { "1000", LONG, "0" }, "RLK_BADOWNER" },
      { { "1000", "", "0" }, "RLK_BADOWNER" },
      { { "1000", B, "01" }, "RLK_BADARG" },
      { { "1000", B, "67108864" }, "RLK_BADARG" },
      { { "1000", B, "x", "0" }, "RLK_BADARG ticket" },
      { { "x", B, "x", "0" }, "RLK_BADLEASE" },
      { { "1000", "", "0", "0" }, "RLK_BADOWNER" },
      { { "1000", B, "0", "0" }, "RLK_BADARG delay_ms" },
    }
    for _, case in ipairs(cases) do
      local keys = { LOCK, WAITERS, GRANT, case[1][4] and DELAY or nil }
      local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, DELAY })
      sa.assert_error(r:script("reentrant/acquire", keys, case[1]), case[2])
      sa.assert_unchanged(r, before)
    end
  end)

  it("release: publish, owner, lease, claim_ms", function()
    local cases = {
      { { "", "0", "0", "pub" }, "RLK_BADPUBLISH" },
      { { A, "0", "0", "PUBLISH" }, "RLK_BADPUBLISH" },
      { { LONG, "0", "0", "spublish" }, "RLK_BADOWNER" },
      { { "", "1000", "50", "publish" }, "RLK_BADOWNER" },
      { { A, "0", "0", "publish" }, "RLK_BADLEASE" },
      { { A, "1000000000001", "50", "publish" }, "RLK_BADLEASE" },
      { { A, "1000", "0", "publish" }, "RLK_BADARG claim_ms" },
      { { A, "1000", "50", "PUBLISH" }, "RLK_BADPUBLISH" },
      { { A, "30000", "50", "PUBLISH" }, "RLK_BADPUBLISH" },
      { { A, "30000", "0", "publish" }, "RLK_BADARG claim_ms" },
      { { A, "1000", "1000000000001", "publish" }, "RLK_BADARG claim_ms" },
    }
    for _, case in ipairs(cases) do
      local before = sa.snapshot(r, { LOCK, WAITERS, GRANT })
      sa.assert_error(r:script("reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT }, case[1]),
        case[2])
      sa.assert_unchanged(r, before)
      assert.same({}, r:published())
    end
  end)

  -- The default lease '30000' is recognised by one comparison on the fast paths: every other
  -- argument is still checked there, on a free lock as on a held one.
  it("the default lease 30000 takes the fast path with good arguments only", function()
    r:reset()
    local cases = {
      { { "30000", "" }, "RLK_BADOWNER" },
      { { "30000", LONG }, "RLK_BADOWNER" },
      { { "30000", "", "0" }, "RLK_BADOWNER" },
      { { "30000", LONG, "0" }, "RLK_BADOWNER" },
      { { "30000", B, "01" }, "RLK_BADARG" },
    }
    for _, case in ipairs(cases) do
      local before = sa.snapshot(r, { LOCK, WAITERS, GRANT })
      sa.assert_error(r:script("reentrant/acquire", { LOCK, WAITERS, GRANT }, case[1]), case[2])
      sa.assert_unchanged(r, before)
    end
    assert.equal(NIL, r:script("reentrant/acquire", { LOCK, WAITERS, GRANT }, { "30000", B }))
    assert.is_true(r:call("PTTL", LOCK) > 30000 - sa.TTL_SLACK_MS)
    assert.equal(1, r:script("reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT }, { B, "30000" }))
  end)

  it("the usual arguments at their bounds are taken as before", function()
    -- a 12-digit lease and claim window (the longest the fast paths read) and a 13-digit one
    assert.equal(NIL, r:script("reentrant/acquire", { LOCK, WAITERS, GRANT },
      { "999999999999", A, "0" }))
    assert.equal("2", count(A))
    assert.equal(0, release(A, "1000000000000"))
    assert.equal(1, r:script("reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT },
      { A, "999999999999", "999999999999", "spublish" }))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.equal(NIL, r:script("reentrant/acquire", { LOCK, WAITERS, GRANT },
      { "1000000000000", string.rep("y", 1024), "0" }))
  end)
end)

describe("reentrant/release", function()
  it("releases the last hold: key deleted, 0 published on the channel", function()
    assert.equal(NIL, acquire(A))
    r:published()
    assert.equal(1, release(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
  end)

  it("leaves one reentry: count - 1, TTL raised to a longer lease, nothing published", function()
    assert.equal(NIL, acquire(A, 2000))
    assert.equal(NIL, acquire(A, 2000))
    r:published()
    assert.equal(0, release(A, 600000))
    assert.equal("1", count(A))
    sa.assert_pttl(r, LOCK, 600000, 600000 - sa.TTL_SLACK_MS)
    assert.same({}, r:published())
    assert.equal(1, release(A))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
  end)

  it("replies nil to another owner and changes nothing", function()
    assert.equal(NIL, acquire(A))
    r:published()
    local before = sa.snapshot(r, { LOCK })
    assert.equal(NIL, release(B))
    sa.assert_unchanged(r, before)
  end)

  it("replies nil when there is no lock, creates nothing and publishes nothing", function()
    assert.equal(NIL, release(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({}, r:published())
  end)

  it_virtual("replies nil once the lease ran out", function()
    assert.equal(NIL, acquire(A, 1000))
    r:advance(1001)
    r:published()
    assert.equal(NIL, release(A))
    assert.same({}, r:published())
  end)

  it("checks the lease even when the call would delete the lock", function()
    assert.equal(NIL, acquire(A))
    r:published()
    local before = sa.snapshot(r, { LOCK })
    sa.assert_error(release(A, "0"), "RLK_BADLEASE")
    sa.assert_unchanged(r, before)
  end)

  wrongtype_cases(function() return release(A) end)
  validation_cases(function(lease, owner) return release(owner, lease) end, {
    { "reentrant/release", { LOCK, CHANNEL }, { A, "1000", "50", "publish" } },
    { "reentrant/release", { LOCK, CHANNEL, WAITERS }, { A, "1000", "50", "publish" } },
    { "reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT, "{res}:rlk_delay", "{res}:other" },
      { A, "1000", "50", "publish" } },
    { "reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT }, { A, "1000", "50" } },
    { "reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT }, { A, "1000", "publish" } },
    { "reentrant/release", { LOCK, CHANNEL, WAITERS }, { A, "1000" } },
    { "reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT }, { A } },
    { "reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT, "{res}:rlk_who" }, { A, "1000", "held" } },
    { "reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT }, { A, "1000", "50", "publish", "0" } },
    { "reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT }, { A, "1000", "0", "publish" } },
    { "reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT }, { A, "1000", "5e1", "publish" } },
  })
  sa.publish_cases(r, { LOCK }, function() assert.equal(NIL, acquire(A)) end,
    function(pub) return release(A, nil, nil, pub) end, CHANNEL)
  describe("handing over to a queued waiter (grant on its wake channel, then 0)", function()
    sa.publish_cases(r, { LOCK, WAITERS, GRANT }, function()
      assert.equal(NIL, acquire(A))
      assert.is_true(first_in_queue(acquire(B, nil, nil, 11)))
    end, function(pub) return release(A, nil, nil, pub) end, { CHANNEL, wake(11) })
  end)
end)

-- The usual calls' short forms (acquire: 3 keys and 2 arguments, the ticket 0 left out; release:
-- 4 keys and 2 arguments, claim_ms 50 and publish left out), what rlk's clients send: from every
-- state the long form with those values sees, the same reply, keys and messages.
describe("the short forms", function()
  local function acquire_short(owner, lease)
    return r:script("reentrant/acquire", { LOCK, WAITERS, GRANT }, { tostring(lease or LEASE), owner })
  end
  local function release_long50(owner, lease)
    return r:script("reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT },
      { owner, tostring(lease or LEASE), "50", "publish" })
  end
  local function release_short(owner, lease)
    return r:script("reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT },
      { owner, tostring(lease or LEASE) })
  end
  -- Replies and TTLs read a moment apart on a real server: a TTL in either may be lower by less
  -- than TTL_SLACK_MS.
  local function close(a, b)
    if type(a) == "number" and type(b) == "number" and a > 0 and b > 0 then
      return math.abs(a - b) < sa.TTL_SLACK_MS
    end
    if type(a) == "table" and type(b) == "table" and a.err == nil and b.err == nil then
      if #a ~= #b then return false end
      for i = 1, #a do
        if not close(a[i], b[i]) then return false end
      end
      return true
    end
    if type(a) == "table" and type(b) == "table" then
      return a.err:match("^%S+") == b.err:match("^%S+")
    end
    return a == b
  end
  local KEYS = { LOCK, WAITERS, GRANT, CHANNEL }
  -- The state setup() makes, then call: its reply, the keys after it and what it published.
  local function run(setup, call)
    r:reset()
    setup()
    r:published()
    local reply = call()
    return reply, sa.snapshot(r, KEYS), r:published()
  end
  local function same(setups, long, short)
    for name, setup in pairs(setups) do
      local lr, ls, lp = run(setup, long)
      local sr, ss, sp = run(setup, short)
      assert.is_true(close(lr, sr), name .. ": replies differ")
      for i = 1, #ls do
        assert.equal(ls[i].type, ss[i].type, name .. ": type of " .. ls[i].key)
        assert.same(ls[i].content, ss[i].content, name .. ": content of " .. ls[i].key)
        assert.is_true(ls[i].pttl == ss[i].pttl or close(ls[i].pttl, ss[i].pttl),
          name .. ": TTL of " .. ls[i].key)
      end
      assert.same(lp, sp, name .. ": messages")
    end
  end
  local function queued_behind(holder)
    return function()
      assert.equal(NIL, acquire(holder))
      assert.is_true(first_in_queue(acquire(B, nil, nil, tk(11))))
    end
  end
  local function foreign(spec)
    return function() sa.make(r, spec, LOCK) end
  end

  it("acquire: the same as ticket 0 from every state", function()
    same({
      free = function() end,
      mine = function() assert.equal(NIL, acquire(A, 2000)) end,
      mine_no_ttl = function() r:call("HSET", LOCK, A, "1") end,
      others = function() assert.equal(NIL, acquire(B)) end,
      others_no_ttl = function() r:call("HSET", LOCK, B, "1") end,
      queued_behind_me = queued_behind(A),
      queued_behind_other = function()
        assert.equal(NIL, acquire(B))
        assert.is_true(first_in_queue(acquire(A, nil, nil, tk(12))))
      end,
      reserved = function()
        queued_behind(A)()
        assert.equal(2, release(A))
      end,
      waiters_left = function() r:call("RPUSH", WAITERS, tk(3)) end,
      grant_foreign = function() r:call("SADD", GRANT, "x") end,
      string_lock = foreign({ "SET", LOCK, "token" }),
      list_lock = foreign(sa.OTHER_TYPES.list),
      set_lock = foreign(sa.OTHER_TYPES.set),
      zset_lock = foreign(sa.OTHER_TYPES.zset),
      foreign_hash = function() r:call("HSET", LOCK, "field", "value") end,
    }, function() return acquire(A, 40000) end, function() return acquire_short(A, 40000) end)
  end)

  it("release: the same as claim_ms 50 and publish from every state", function()
    same({
      free = function() end,
      mine = function() assert.equal(NIL, acquire(A, 2000)) end,
      mine_twice = function()
        assert.equal(NIL, acquire(A, 2000))
        assert.equal(NIL, acquire(A, 2000))
      end,
      mine_no_ttl = function() r:call("HSET", LOCK, A, "2") end,
      others = function() assert.equal(NIL, acquire(B)) end,
      waiters_foreign = function()
        assert.equal(NIL, acquire(A))
        r:call("SET", WAITERS, "x")
      end,
      string_lock = foreign({ "SET", LOCK, "token" }),
      list_lock = foreign(sa.OTHER_TYPES.list),
    }, function() return release_long50(A, 40000) end, function() return release_short(A, 40000) end)
  end)

  -- The grant's claim window is 50 ms: on a real server it may run out before it is read.
  it("release: hands over to the first waiter as claim_ms 50 and publish do", function()
    queued_behind(A)()
    r:published()
    assert.equal(2, release_short(A))
    assert.same({ { channel = wake(W + 11), message = string.format("%d", (W + 11) * 67108864) },
      { channel = CHANNEL, message = "0" } }, r:published())
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({}, r:call("LRANGE", WAITERS, 0, -1))
    local pttl = r:call("PTTL", GRANT)
    assert.is_true(pttl == -2 or pttl > 0 and pttl <= 50, "grant PTTL " .. tostring(pttl))
  end)

  it_virtual("release: the grant it makes lasts claim_ms 50", function()
    queued_behind(A)()
    assert.equal(2, release_short(A))
    assert.equal(tk(11), r:call("GET", GRANT))
    assert.equal(50, r:call("PTTL", GRANT))
  end)

  validation_cases(function(lease, owner) return acquire_short(owner, lease) end, {
    { "reentrant/acquire", { LOCK, WAITERS }, { "1000", A } },
    { "reentrant/acquire", { LOCK, WAITERS, GRANT, "{res}:rlk_delay" }, { "1000", A } },
  })
  validation_cases(function(lease, owner) return release_short(owner, lease) end, {
    { "reentrant/release", { LOCK, CHANNEL, WAITERS }, { A, "1000" } },
    { "reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT }, { A, "1000", "50" } },
  })
end)

describe("reentrant/renew", function()
  it("resets the lease of a lock the owner holds and replies 1", function()
    assert.equal(NIL, acquire(A, 2000))
    assert.equal(NIL, acquire(A, 2000))
    assert.equal(1, renew(A, 600000))
    sa.assert_pttl(r, LOCK, 600000, 600000 - sa.TTL_SLACK_MS)
    assert.equal("2", count(A))
  end)

  it("replies 0 to another owner and changes nothing", function()
    assert.equal(NIL, acquire(A, 5000))
    local before = sa.snapshot(r, { LOCK })
    assert.equal(0, renew(B, 600000))
    sa.assert_unchanged(r, before)
  end)

  it("replies 0 when there is no lock and creates none", function()
    assert.equal(0, renew(A))
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  it_virtual("replies 0 once the lease ran out (the watchdog's lost-lock signal)", function()
    assert.equal(NIL, acquire(A, 1000))
    r:advance(1001)
    assert.equal(0, renew(A))
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  wrongtype_cases(function() return renew(A) end)
  validation_cases(function(lease, owner) return renew(owner, lease) end, {
    { "reentrant/renew", {}, { "1000", A } },
    { "reentrant/renew", { LOCK, "{res}:rlk_delay", "{res}:other" }, { "1000", A } },
    { "reentrant/renew", { LOCK }, { "1000" } },
    { "reentrant/renew", { LOCK }, { "1000", A, "extra" } },
  })
end)

describe("reentrant/renew_many", function()
  local K1, K2, K3 = "{res}:1", "{res}:2", "{res}:3"
  local function renew_many(keys, args) return r:script("reentrant/renew_many", keys, args) end

  it("renews with one owner for all keys, 1 per held key and 0 for the others", function()
    assert.equal(NIL, acquire(A, 2000, K1))
    assert.equal(NIL, acquire(B, 2000, K2))
    assert.same({ 1, 0, 0 }, renew_many({ K1, K2, K3 }, { "600000", A }))
    sa.assert_pttl(r, K1, 600000, 600000 - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, K2, 2000)
    assert.equal(0, r:call("EXISTS", K3))
  end)

  it("renews with one owner per key", function()
    assert.equal(NIL, acquire(A, 2000, K1))
    assert.equal(NIL, acquire(B, 2000, K2))
    assert.equal(NIL, acquire(A, 2000, K3))
    assert.same({ 1, 1, 0 }, renew_many({ K1, K2, K3 }, { "600000", A, B, B }))
    sa.assert_pttl(r, K1, 600000, 600000 - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, K2, 600000, 600000 - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, K3, 2000)
  end)

  it("renews a single key", function()
    assert.equal(NIL, acquire(A, 2000, K1))
    assert.same({ 1 }, renew_many({ K1 }, { "600000", A }))
    assert.same({ 0 }, renew_many({ K1 }, { "600000", B }))
  end)

  it("replies all zeros when nothing is held", function()
    assert.same({ 0, 0 }, renew_many({ K1, K2 }, { "1000", A }))
    assert.equal(0, r:call("EXISTS", K1))
  end)

  it_virtual("reports a lock whose lease ran out as 0", function()
    assert.equal(NIL, acquire(A, 1000, K1))
    assert.equal(NIL, acquire(A, 5000, K2))
    r:advance(1001)
    assert.same({ 0, 1 }, renew_many({ K1, K2 }, { "5000", A }))
  end)

  describe("validates every entry before renewing any", function()
    before_each(function()
      assert.equal(NIL, acquire(A, 5000, K1))
      assert.equal(NIL, acquire(B, 5000, K2))
    end)

    it("a bad owner in the middle", function()
      for _, owner in ipairs({ "", string.rep("x", 1025) }) do
        local before = sa.snapshot(r, { K1, K2, K3 })
        sa.assert_error(renew_many({ K1, K2, K3 }, { "600000", A, owner, B }), "RLK_BADOWNER")
        sa.assert_unchanged(r, before)
      end
    end)

    it("a wrong-type key at the end", function()
      r:call("SET", K3, "x")
      local before = sa.snapshot(r, { K1, K2, K3 })
      sa.assert_error(renew_many({ K1, K2, K3 }, { "600000", A }), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end)

    it("a bad lease", function()
      for _, lease in ipairs(sa.BAD_LEASES) do
        local before = sa.snapshot(r, { K1, K2 })
        sa.assert_error(renew_many({ K1, K2 }, { lease, A }), "RLK_BADLEASE")
        sa.assert_unchanged(r, before)
      end
    end)

    it("no keys, or neither one owner nor one per key", function()
      for _, case in ipairs({
        { {}, { "600000", A } },
        { {}, { "600000" } },
        { { K1, K2 }, { "600000" } },
        { { K1, K2, K3 }, { "600000", A, B } },
        { { K1, K2 }, { "600000", A, B, A } },
      }) do
        local before = sa.snapshot(r, { K1, K2 })
        sa.assert_error(renew_many(case[1], case[2]), "RLK_BADARG")
        sa.assert_unchanged(r, before)
      end
    end)
  end)
end)

describe("reentrant/force_release", function()
  local function force(keys, args)
    return r:script("reentrant/force_release", keys or { LOCK, CHANNEL }, args or { "publish" })
  end

  it("deletes a lock whoever holds it and publishes 0", function()
    assert.equal(NIL, acquire(A))
    assert.equal(NIL, acquire(A))
    r:published()
    assert.equal(1, force())
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    assert.equal(NIL, release(A))
  end)

  it("replies 0 when there is no lock and publishes nothing", function()
    assert.equal(0, force())
    assert.same({}, r:published())
  end)

  wrongtype_cases(function() return force() end)
  sa.publish_cases(r, { LOCK }, function() assert.equal(NIL, acquire(A)) end,
    function(pub) return force(nil, { pub }) end, CHANNEL)

  it("refuses the wrong number of keys or any argument", function()
    assert.equal(NIL, acquire(A))
    r:published()
    for _, case in ipairs({ { { LOCK } }, { { LOCK, CHANNEL, "{res}:rlk_delay", "{res}:x" } },
                            { { LOCK, CHANNEL }, {} },
                            { { LOCK, CHANNEL }, { "publish", "0" } } }) do
      local before = sa.snapshot(r, { LOCK })
      sa.assert_error(force(case[1], case[2]), "RLK_BADARG")
      sa.assert_unchanged(r, before)
    end
  end)
end)

describe("reentrant lock life cycle", function()
  it("excludes, re-enters, hands over on release", function()
    assert.equal(NIL, acquire(A))
    assert.equal(NIL, acquire(A))
    assert.is_number(acquire(B))
    assert.equal(0, release(A))
    assert.is_number(acquire(B))
    assert.equal(NIL, release(B))
    assert.equal(1, release(A))
    assert.equal(NIL, acquire(B))
    assert.equal("1", count(B))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
  end)
end)

-- The handoff across processes (docs/runtime.md): a waiter's failed attempt queues its ticket; the
-- last release reserves the free lock for the first ticket (grant, PX claim window), publishes
-- head * 2^26 on that ticket's wake channel and then the standard 0 on the lock's channel; only
-- that ticket may take the free lock meanwhile. The first in the queue is told so ({wait, 1}).
describe("reentrant lock handoff to queued waiters", function()
  local C = "1b9e7c2a-uuid-c:3"
  local SHIFT = 67108864

  local function grant_msg(head)
    return string.format("%.0f", head * SHIFT)
  end

  it("queues waiters in arrival order, once each, only when they ask to wait", function()
    assert.equal(NIL, acquire(A))
    assert.is_number(acquire(B, nil, nil, 0))
    assert.equal(0, r:call("EXISTS", WAITERS))
    assert.is_true(first_in_queue(acquire(B, nil, nil, 11)))  -- first: told so
    assert.is_number(acquire(C, nil, nil, 22))
    assert.is_true(first_in_queue(acquire(B, nil, nil, -11)))  -- queued already: stays first
    assert.is_number(acquire(C, nil, nil, -22))
    assert.same({ "11", "22" }, r:call("LRANGE", WAITERS, "0", "-1"))
    assert.is_true(r:call("PTTL", WAITERS) > 0, "the queue expires when nobody comes any more")
  end)

  it("reserves the freed lock for the first waiter and grants it on its wake channel, then 0", function()
    assert.equal(NIL, acquire(A))
    acquire(B, nil, nil, (W + 11))
    acquire(C, nil, nil, (W + 22))
    r:published()
    assert.equal(2, release(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.equal(tk(11), r:call("GET", GRANT))
    sa.assert_pttl(r, GRANT, CLAIM, 1)
    assert.same({ tk(22) }, r:call("LRANGE", WAITERS, "0", "-1"))
    assert.same({ { channel = wake(W + 11), message = grant_msg(W + 11) }, { channel = CHANNEL, message = "0" } },
      r:published())
  end)

  it("grants a ticket below 2^25 (no wake channel) on the lock's channel, naming the next, as before", function()
    assert.equal(NIL, acquire(A))
    acquire(B, nil, nil, 11)
    acquire(C, nil, nil, 22)
    r:published()
    assert.equal(2, release(A))
    assert.equal("11", r:call("GET", GRANT))
    assert.same({ { channel = CHANNEL, message = string.format("%.0f", 11 * SHIFT + 22) },
                  { channel = CHANNEL, message = "0" } }, r:published())
  end)

  it("skips a waiter whose wake channel nobody hears (its client is gone) and grants the next", function()
    local D = "1b9e7c2a-uuid-d:4"
    r:ssubscribe(wake(W + 2048))            -- sharded: only ticket 2048's client still listens
    r:ssubscribe(CHANNEL)
    assert.equal(NIL, acquire(A))
    acquire(B, nil, nil, (W + 1024))
    acquire(C, nil, nil, (W + 2048))
    acquire(D, nil, nil, (W + 3072))
    r:published()
    assert.equal(2, release(A, nil, nil, "spublish"))
    assert.equal(tk(2048), r:call("GET", GRANT))
    assert.same({ tk(3072) }, r:call("LRANGE", WAITERS, "0", "-1"))
    local got = {}
    for _, p in ipairs(r:published()) do
      if p.channel ~= wake(W + 1024) then got[#got + 1] = { channel = p.channel, message = p.message } end
    end
    assert.same({ { channel = wake(W + 2048), message = grant_msg(W + 2048) }, { channel = CHANNEL, message = "0" } },
      got)
  end)

  it("lets only the reserved ticket take the free lock; the releaser queues behind", function()
    assert.equal(NIL, acquire(A))
    acquire(B, nil, nil, 11)
    release(A)
    r:published()
    local before = sa.snapshot(r, { LOCK, GRANT })
    assert.equal(-3, acquire(A, nil, nil, 33))      -- first behind the reservation: after its window
    assert.is_number(acquire(C, nil, nil, 0))       -- a single try: waits out the claim window
    assert.is_true(acquire(C, nil, nil, 0) > 0)
    sa.assert_unchanged(r, before)
    assert.same({ "33" }, r:call("LRANGE", WAITERS, "0", "-1"))
    assert.equal(NIL, acquire(B, nil, nil, -11))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.same({ "33" }, r:call("LRANGE", WAITERS, "0", "-1"))
  end)

  it("a release with nobody queued publishes the bare 0 only", function()
    assert.equal(NIL, acquire(A))
    r:published()
    assert.equal(1, release(A))
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
  end)

  it_virtual("a reservation nobody claims runs out: then anyone may take the lock", function()
    assert.equal(NIL, acquire(A))
    acquire(B, nil, nil, 11)   -- B will die
    acquire(C, nil, nil, 22)
    release(A)
    assert.equal(-3, acquire(C, nil, nil, -22))    -- now first, behind the reservation
    r:advance(CLAIM + 1)
    assert.equal(NIL, acquire(C, nil, nil, -22))   -- its attempt after the claim window
    assert.equal(0, r:call("EXISTS", WAITERS))
  end)

  it("a queued waiter that takes a free, unreserved lock leaves the queue", function()
    acquire(A)
    acquire(B, nil, nil, 11)
    acquire(C, nil, nil, 22)
    r:call("DEL", LOCK)     -- the holder's lease ran out: no release, no reservation
    assert.equal(NIL, acquire(C, nil, nil, -22))
    assert.same({ "11" }, r:call("LRANGE", WAITERS, "0", "-1"))
  end)

  it("a waiter whose entry was lost joins again at the tail, and listens on the lock's channel", function()
    acquire(A)
    acquire(B, nil, nil, 11)
    r:call("DEL", WAITERS)
    acquire(C, nil, nil, 22)
    assert.is_true(first_in_queue(acquire(B, nil, nil, -11)))
    assert.same({ "22", "11" }, r:call("LRANGE", WAITERS, "0", "-1"))
  end)

  it_virtual("a Redisson client may take the reserved lock; the grantee queues once its window ran out", function()
    acquire(A)
    acquire(B, nil, nil, 11)
    release(A)
    r:call("HSET", LOCK, "redisson-uuid:1", "1")   -- Redisson's acquire ignores the reservation
    r:call("PEXPIRE", LOCK, "30000")
    local rep = acquire(B, nil, nil, -11)           -- the Redisson holder's PTTL; it hears CHANNEL
    assert.is_true(first_in_queue(rep))
    assert.equal(30000, rep[1])
    assert.equal(0, r:call("EXISTS", WAITERS))      -- still reserved for 11: not queued
    assert.equal("11", r:call("GET", GRANT))
    r:advance(CLAIM + 1)
    assert.is_true(first_in_queue(acquire(B, nil, nil, -11)))  -- queued again, first
    assert.same({ "11" }, r:call("LRANGE", WAITERS, "0", "-1"))
  end)

  it("a grantee beaten by a Redisson client claims the freed lock and leaves no entry behind", function()
    acquire(A)
    acquire(B, nil, nil, 11)
    acquire(C, nil, nil, 22)
    release(A)
    r:call("HSET", LOCK, "redisson-uuid:1", "1")
    assert.is_true(first_in_queue(acquire(B, nil, nil, -11)))  -- reserved: hears the Redisson 0
    assert.same({ "22" }, r:call("LRANGE", WAITERS, "0", "-1"))
    r:call("DEL", LOCK)                             -- Redisson's unlock: DEL + 0
    assert.equal(NIL, acquire(B, nil, nil, -11))
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.same({ "22" }, r:call("LRANGE", WAITERS, "0", "-1"))
    assert.equal(2, release(B))                     -- the next grant goes to 22, not to 11 again
    assert.equal("22", r:call("GET", GRANT))
  end)

  it("tells the first waiter queued behind another ticket's reservation to attempt after the claim window", function()
    acquire(A)
    acquire(B, nil, nil, 11)
    release(A)                                      -- reserved for 11, nobody else queued
    assert.equal(-3, acquire(A, nil, nil, 33))      -- first behind it: no grant names it
    assert.equal(-1, acquire(C, nil, nil, 44))      -- second: 33 goes first
    assert.equal(-3, acquire(A, nil, nil, -33))     -- queued already, still first behind it
    assert.same({ "33", "44" }, r:call("LRANGE", WAITERS, "0", "-1"))
  end)

  it_virtual("a first waiter behind a dead grantee takes the lock once the claim window is over", function()
    acquire(A)
    acquire(B, nil, nil, 11)                        -- B will die
    release(A)
    assert.equal(-3, acquire(C, nil, nil, 33))
    r:advance(CLAIM + 1)
    assert.equal(NIL, acquire(C, nil, nil, -33))
    assert.equal(0, r:call("EXISTS", WAITERS))
  end)

  describe("reentrant/cancel", function()
    it("takes a waiter out of the queue; the new first one is woken to learn it is first", function()
      local D = "1b9e7c2a-uuid-d:4"
      acquire(A)
      acquire(B, nil, nil, (W + 11))
      acquire(C, nil, nil, (W + 22))
      acquire(D, nil, nil, (W + 33))
      r:published()
      assert.equal(1, cancel(W + 22))                  -- not first: nobody is told
      assert.same({}, r:published())
      assert.equal(1, cancel(W + 11))
      assert.same({ tk(33) }, r:call("LRANGE", WAITERS, "0", "-1"))
      assert.same({ { channel = wake(W + 33), message = grant_msg(W + 33) } }, r:published())
      assert.equal(0, cancel(W + 11))
      assert.same({}, r:published())
      assert.is_true(first_in_queue(acquire(D, nil, nil, -(W + 33))))
    end)

    it("passes an unclaimed reservation on to the next waiter at once", function()
      acquire(A)
      acquire(B, nil, nil, (W + 11))
      acquire(C, nil, nil, (W + 22))
      release(A)
      r:published()
      assert.equal(2, cancel(W + 11))
      assert.equal(tk(22), r:call("GET", GRANT))
      assert.same({ { channel = wake(W + 22), message = grant_msg(W + 22) }, { channel = CHANNEL, message = "0" } },
        r:published())
      assert.equal(NIL, acquire(C, nil, nil, -(W + 22)))
    end)

    it("drops the reservation and publishes 0 when nobody else waits", function()
      acquire(A)
      acquire(B, nil, nil, 11)
      release(A)
      r:published()
      assert.equal(2, cancel(11))
      assert.equal(0, r:call("EXISTS", GRANT))
      assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    end)

    it("refuses bad tickets, claim windows and key counts without changing anything", function()
      acquire(A)
      acquire(B, nil, nil, 11)
      for _, case in ipairs({ { { LOCK, CHANNEL, WAITERS, GRANT }, { "0", "50", "publish" } },
                              { { LOCK, CHANNEL, WAITERS, GRANT }, { "-11", "50", "publish" } },
                              { { LOCK, CHANNEL, WAITERS, GRANT }, { "11", "0", "publish" } },
                              { { LOCK, CHANNEL, WAITERS, GRANT }, { "11", "50" } },
                              { { LOCK, CHANNEL, WAITERS, GRANT }, { "11", "50", "publish", "0" } },
                              { { LOCK, CHANNEL, WAITERS }, { "11", "50", "publish" } } }) do
        local before = sa.snapshot(r, { LOCK, WAITERS, GRANT })
        sa.assert_error(r:script("reentrant/cancel", case[1], case[2]), "RLK_BADARG")
        sa.assert_unchanged(r, before)
      end
    end)

    -- A reservation passed on (grant to the next waiter, then 0) goes out with the command given.
    sa.publish_cases(r, { LOCK, WAITERS, GRANT }, function()
      acquire(A)
      acquire(B, nil, nil, 11)
      acquire(C, nil, nil, 22)
      assert.equal(2, release(A))
    end, function(pub) return cancel(11, pub) end, { CHANNEL, wake(22) })
  end)

  it("refuses a reservation of another type before queueing a waiter that lost its entry", function()
    acquire(A)
    r:call("HSET", GRANT, "f", "v")
    local before = sa.snapshot(r, { LOCK, WAITERS, GRANT })
    sa.assert_error(acquire(B, nil, nil, -11), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
  end)

  it("refuses companion keys of another type before any write", function()
    acquire(A)
    r:call("SET", WAITERS, "x")
    local before = sa.snapshot(r, { LOCK, WAITERS })
    sa.assert_error(acquire(B, nil, nil, 11), "RLK_WRONGTYPE")
    sa.assert_error(release(A), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
    r:call("DEL", WAITERS, LOCK)
    r:call("HSET", GRANT, "f", "v")
    before = sa.snapshot(r, { LOCK, GRANT })
    sa.assert_error(acquire(B, nil, nil, 11), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
  end)
end)
