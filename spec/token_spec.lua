-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/token/*.lua on the backend RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local helpers = require("support.helpers")
local sa = require("script_asserts")

local NIL = backend.NIL
local LOCK = "{job}:lock"
local T1, T2 = "c0ffee-token-1", "c0ffee-token-2"
local LEASE = 30000
local it_virtual = helpers.it_virtual

local r = backend.new()

local function acquire(token, lease)
  return r:script("token/acquire", { LOCK }, { token, tostring(lease or LEASE) })
end
local function release(token)
  return r:script("token/release", { LOCK }, { token })
end
local function extend(token, lease)
  return r:script("token/extend", { LOCK }, { token, tostring(lease or LEASE) })
end

before_each(function() r:reset() end)

-- A hash, list, set or zset at the lock key: RLK_WRONGTYPE, key untouched.
local function wrongtype_cases(call)
  it("refuses a lock key of another type with RLK_WRONGTYPE", function()
    local kinds = { { "HSET", LOCK, "owner:1", "1" } }
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

-- Bad tokens and wrong counts for every script; bad leases where the script takes one.
local function validation_cases(call, counts, takes_lease)
  describe("refuses bad arguments without changing anything", function()
    before_each(function() assert.equal(NIL, acquire(T1, 5000)) end)

    it("an empty token or one longer than 1024 bytes", function()
      for _, token in ipairs({ "", string.rep("t", 1025) }) do
        local before = sa.snapshot(r, { LOCK })
        sa.assert_error(call(token, "60000"), "RLK_BADTOKEN")
        sa.assert_unchanged(r, before)
      end
    end)

    if takes_lease then
      it("a lease that is not an integer in 1..10^12", function()
        for _, lease in ipairs(sa.BAD_LEASES) do
          local before = sa.snapshot(r, { LOCK })
          sa.assert_error(call(T1, lease), "RLK_BADLEASE")
          sa.assert_unchanged(r, before)
        end
      end)
    end

    it("the wrong number of keys or arguments", function()
      for _, case in ipairs(counts) do
        local before = sa.snapshot(r, { LOCK, "{job}:other" })
        sa.assert_error(r:script(case[1], case[2], case[3]), "RLK_BADARG")
        sa.assert_unchanged(r, before)
      end
    end)
  end)
end

describe("token/acquire", function()
  it("takes a free lock: the key holds the token with the lease", function()
    assert.equal(NIL, acquire(T1))
    assert.equal(T1, r:call("GET", LOCK))
    sa.assert_pttl(r, LOCK, LEASE, LEASE - sa.TTL_SLACK_MS)
  end)

  it("refuses another token with the holder's PTTL and changes nothing", function()
    assert.equal(NIL, acquire(T1, 20000))
    local before = sa.snapshot(r, { LOCK })
    local ttl = acquire(T2, 600000)
    assert.is_number(ttl)
    assert.is_true(ttl > 0 and ttl <= 20000, "PTTL reply " .. ttl)
    sa.assert_unchanged(r, before)
  end)

  it("is not reentrant: the holder's own token gets the PTTL too, lease not reset", function()
    assert.equal(NIL, acquire(T1, 20000))
    local before = sa.snapshot(r, { LOCK })
    local ttl = acquire(T1, 600000)
    assert.is_true(ttl > 0 and ttl <= 20000, "PTTL reply " .. ttl)
    sa.assert_unchanged(r, before)
  end)

  it("replies -1 for a lock another client set without a TTL", function()
    r:call("SET", LOCK, T2)
    assert.equal(-1, acquire(T1))
    assert.equal(T2, r:call("GET", LOCK))
  end)

  it("accepts the smallest and the largest lease and a 1024-byte token", function()
    local token = string.rep("t", 1024)
    assert.equal(NIL, acquire(token, "1000000000000"))
    assert.equal(token, r:call("GET", LOCK))
    sa.assert_pttl(r, LOCK, 1000000000000, 1000000000000 - sa.TTL_SLACK_MS)
    r:call("DEL", LOCK)
    assert.equal(NIL, acquire(T1, "1"))
    assert.is_true(r:call("PTTL", LOCK) <= 1)
  end)

  it_virtual("lets another token in once the lease ran out", function()
    assert.equal(NIL, acquire(T1, 1000))
    r:advance(999)
    assert.equal(1, acquire(T2))
    r:advance(1)
    assert.equal(0, acquire(T2)) -- PTTL 0: Redis keeps a key until its deadline has passed
    r:advance(1)
    assert.equal(NIL, acquire(T2))
    assert.equal(T2, r:call("GET", LOCK))
  end)

  wrongtype_cases(function() return acquire(T1) end)
  validation_cases(function(token, lease) return acquire(token, lease) end, {
    { "token/acquire", {}, { T1, "1000" } },
    { "token/acquire", { LOCK, "{job}:other" }, { T1, "1000" } },
    { "token/acquire", { LOCK }, { T1 } },
    { "token/acquire", { LOCK }, { T1, "1000", "NX" } },
  }, true)
end)

describe("token/release", function()
  it("deletes the key when it holds the token", function()
    assert.equal(NIL, acquire(T1))
    assert.equal(1, release(T1))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({}, r:published())
  end)

  it("replies 0 and keeps the lock when it holds another token", function()
    assert.equal(NIL, acquire(T2))
    local before = sa.snapshot(r, { LOCK })
    assert.equal(0, release(T1))
    sa.assert_unchanged(r, before)
  end)

  it("replies 0 when there is no lock", function()
    assert.equal(0, release(T1))
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  it_virtual("cannot delete the lock another took after the lease ran out", function()
    assert.equal(NIL, acquire(T1, 1000))
    r:advance(1001)
    assert.equal(NIL, acquire(T2, 5000))
    assert.equal(0, release(T1))
    assert.equal(T2, r:call("GET", LOCK))
    assert.equal(1, release(T2))
  end)

  wrongtype_cases(function() return release(T1) end)
  validation_cases(function(token) return release(token) end, {
    { "token/release", {}, { T1 } },
    { "token/release", { LOCK, "{job}:other" }, { T1 } },
    { "token/release", { LOCK }, {} },
    { "token/release", { LOCK }, { T1, "1000" } },
  }, false)
end)

describe("token/extend", function()
  it("sets the lease to lease_ms when the key holds the token", function()
    assert.equal(NIL, acquire(T1, 2000))
    assert.equal(1, extend(T1, 600000))
    sa.assert_pttl(r, LOCK, 600000, 600000 - sa.TTL_SLACK_MS)
    assert.equal(T1, r:call("GET", LOCK))
  end)

  it("sets, not adds: a shorter lease shortens the TTL", function()
    assert.equal(NIL, acquire(T1, 600000))
    assert.equal(1, extend(T1, 2000))
    sa.assert_pttl(r, LOCK, 2000)
  end)

  it("replies 0 and changes nothing when the key holds another token", function()
    assert.equal(NIL, acquire(T2, 5000))
    local before = sa.snapshot(r, { LOCK })
    assert.equal(0, extend(T1, 600000))
    sa.assert_unchanged(r, before)
  end)

  it("replies 0 when there is no lock and creates none", function()
    assert.equal(0, extend(T1))
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  it_virtual("replies 0 once the lease ran out", function()
    assert.equal(NIL, acquire(T1, 1000))
    r:advance(1001)
    assert.equal(0, extend(T1))
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  wrongtype_cases(function() return extend(T1) end)
  validation_cases(function(token, lease) return extend(token, lease) end, {
    { "token/extend", {}, { T1, "1000" } },
    { "token/extend", { LOCK, "{job}:other" }, { T1, "1000" } },
    { "token/extend", { LOCK }, { T1 } },
    { "token/extend", { LOCK }, { T1, "1000", "XX" } },
  }, true)
end)

describe("token lock and reentrant lock on one key", function()
  it("refuse each other's key type", function()
    assert.equal(NIL, acquire(T1))
    local keys = { LOCK, "{job}:rlk_waiters", "{job}:rlk_next" }
    sa.assert_error(r:script("reentrant/acquire", keys, { "1000", "owner:1", "0" }), "RLK_WRONGTYPE")
    r:call("DEL", LOCK)
    assert.equal(NIL, r:script("reentrant/acquire", keys, { "1000", "owner:1", "0" }))
    sa.assert_error(acquire(T1), "RLK_WRONGTYPE")
  end)
end)
