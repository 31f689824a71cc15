-- SPDX-License-Identifier: BSD-3-Clause
-- Keys rlk does not own, two more places (docs/cli.md, "Keys rlk does not own"):
--   * the reentrant lock's lock-delay key {name}:rlk_delay is a string whose value is the delay in
--     ms, with a PX (lib/delay_shape). Anything else there (a list, a hash, a string that is not a
--     number, a number without a TTL) is an application's: force_release does not delete it, an
--     acquire with the lock-delay does not wait on it (for ever) nor overwrite it, a release does
--     not delete it: RLK_WRONGTYPE naming what was found, every key as it was;
--   * a read-write lock's acquire on a hash with a mode field, not the caller's and without a TTL
--     (a live lock always has one), reads its shape (lib/rw_shape) before it joins or waits.
-- On the backend RLK_BACKEND picks (mock or a real redis-server); no virtual clock.
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local sa = require("script_asserts")

local NIL = backend.NIL
local A, B = "7d2c-uuid-a:1", "7d2c-uuid-b:2"
local LOCK, CHANNEL = "{fd}", "redisson_lock__channel:{fd}"
local WAITERS, GRANT, DELAY = "{fd}:rlk_waiters", "{fd}:rlk_next", "{fd}:rlk_delay"
local ALL = { LOCK, WAITERS, GRANT, DELAY }

local r = backend.new()

before_each(function() r:reset() end)

local function acquire(owner, lease, delay)
  return r:script("reentrant/acquire", { LOCK, WAITERS, GRANT, DELAY },
    { tostring(lease or 30000), owner, "0", tostring(delay or 3000) })
end
local function release(owner, lease)
  return r:script("reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT, DELAY },
    { owner, tostring(lease or 30000), "5000", "publish" })
end
local function force(named)
  return r:script("reentrant/force_release", { LOCK, CHANNEL, DELAY }, named and { "publish", "named" }
    or { "publish" })
end

-- What an application may keep at the delay key's name, and the words the refusal names it by.
local FOREIGN = {
  { "a list", { "RPUSH", "%s", "a", "b" }, "list" },
  { "a hash", { "HSET", "%s", "delay", "3000" }, "hash" },
  { "a set", { "SADD", "%s", "3000" }, "set" },
  { "a string that is not a number", { "SET", "%s", "hello" }, "not a delay" },
  { "a JSON string", { "SET", "%s", '{"delay":3000}' }, "not a delay" },
  { "a number out of range", { "SET", "%s", "0" }, "not a delay" },
  { "a number without a TTL", { "SET", "%s", "3000" }, "without a TTL" },
}

-- The call on the keys as set up: RLK_WRONGTYPE naming the delay key and what it holds, every
-- key as it was, nothing published.
local function refused(call, words)
  r:published()
  local before = sa.snapshot(r, ALL)
  local reply = call()
  sa.assert_error(reply, "RLK_WRONGTYPE")
  assert.matches("delay key holds", reply.err, 1, true)
  assert.matches(words, reply.err, 1, true)
  sa.assert_unchanged(r, before)
end

describe("the lock-delay key holding an application's value", function()
  for _, f in ipairs(FOREIGN) do
    it("force_release refuses " .. f[1] .. " without a lock, and leaves it", function()
      sa.make(r, f[2], DELAY)
      refused(force, f[3])
    end)

    it("force_release refuses " .. f[1] .. " beside a live lock, named or not, and leaves both", function()
      r:call("HSET", LOCK, A, "1")
      r:call("PEXPIRE", LOCK, "30000")
      sa.make(r, f[2], DELAY)
      refused(force, f[3])
      refused(function() return force(true) end, f[3])
    end)

    it("an acquire with the lock-delay refuses " .. f[1] .. " on a free lock (no wait for ever)", function()
      sa.make(r, f[2], DELAY)
      refused(function() return acquire(B) end, f[3])
    end)

    it("a re-entry with the lock-delay refuses " .. f[1] .. " (no overwrite)", function()
      assert.equal(NIL, r:script("reentrant/acquire", { LOCK, WAITERS, GRANT }, { "30000", A, "0" }))
      sa.make(r, f[2], DELAY)
      refused(function() return acquire(A) end, f[3])
    end)

    it("the last release refuses " .. f[1] .. " (no delete)", function()
      assert.equal(NIL, acquire(A))
      r:call("DEL", DELAY)
      sa.make(r, f[2], DELAY)
      refused(function() return release(A) end, f[3])
    end)
  end

  it("a delay key of rlk's still works: refused with its PTTL, ended by force_release", function()
    r:call("SET", DELAY, "3000", "PX", "3000")
    local rep = acquire(B)
    assert.is_table(rep)
    assert.is_true(rep[1] > 0 and rep[1] <= 3000)
    assert.equal(2, force())
    assert.equal(0, r:call("EXISTS", DELAY))
    assert.equal(NIL, acquire(B))
    assert.equal(1, release(B))
    assert.equal(0, r:call("EXISTS", LOCK, DELAY))
  end)

  it("force_release without the delay key in KEYS never looks at it", function()
    r:call("RPUSH", DELAY, "a")
    assert.equal(0, r:script("reentrant/force_release", { LOCK, CHANNEL }, { "publish" }))
    assert.equal("list", r:call("TYPE", DELAY).ok)
  end)
end)

-- ---------------------------------------------------------------- read-write lock shape

local RW, PREFIX = "{fr}", "{fr}"
local RWGRANT, RWWAITERS = "{fr}:rlk_next", "{fr}:rlk_waiters"
local function read(owner)
  return r:script("rwlock/read_acquire", { RW, PREFIX, RWGRANT }, { "30000", owner })
end
local function write(owner)
  return r:script("rwlock/write_acquire", { RW, RWWAITERS, RWGRANT }, { "30000", owner, "0" })
end

describe("a read-write lock's acquire on an application hash with a mode field", function()
  local HASHES = {
    { "mode read and a name", { "HSET", "%s", "mode", "read", "name", "alice" } },
    { "mode read and a JSON field", { "HSET", "%s", "mode", "read", "prefs", '{"a":1}' } },
    { "mode read alone", { "HSET", "%s", "mode", "read" } },
    { "mode write and a name", { "HSET", "%s", "mode", "write", "name", "alice" } },
    { "mode write and a count", { "HSET", "%s", "mode", "write", "user:1", "3" } },
  }
  for _, h in ipairs(HASHES) do
    for _, side in ipairs({ { "read", read }, { "write", write } }) do
      it(side[1] .. " refuses " .. h[1] .. " without a TTL and leaves it", function()
        sa.make(r, h[2], RW)
        local keys = { RW, RWGRANT, RWWAITERS, PREFIX .. ":" .. B .. ":rwlock_timeout:1" }
        local before = sa.snapshot(r, keys)
        local reply = side[2](B)
        sa.assert_error(reply, "RLK_WRONGTYPE")
        assert.matches("lock key holds", reply.err, 1, true)
        sa.assert_unchanged(r, before)
      end)
    end
  end

  -- mode read and fields of positive counts (a persisted read lock, or "visits 3") is where the
  -- shape cannot tell: taken as a read lock, as lib/lock_shape takes a one-field count as held.
  it("a read lock someone persisted (its shape, no TTL) is joined by a reader, waited on by a writer", function()
    r:call("HSET", RW, "mode", "read", A, "1")
    assert.equal(NIL, read(B))
    assert.equal("1", r:call("HGET", RW, B))
    assert.equal(-1, r:call("PTTL", RW))                  -- no TTL set on a hold that had none
    local w = write(B .. "x")
    assert.equal(-1, type(w) == "table" and w[1] or w)
  end)

  it("the cheap path reads no shape: a live read lock is joined as before", function()
    assert.equal(NIL, read(A))
    assert.equal(NIL, read(B))
    assert.equal("read", r:call("HGET", RW, "mode"))
  end)

  it("the holder's own hash without a TTL is re-entered without a shape read", function()
    r:call("HSET", RW, "mode", "write", A .. ":write", "1")
    assert.equal(NIL, write(A))
    assert.equal(NIL, read(A))
    assert.equal("2", r:call("HGET", RW, A .. ":write"))
  end)
end)
