-- SPDX-License-Identifier: BSD-3-Clause
-- Keys rlk does not own (docs/cli.md, "Keys rlk does not own"): every script that takes a lock,
-- group or count key, against each foreign value (strings, JSON, list, set, sorted set, stream, an
-- application hash, a hash of counts) and each other kind's live key: RLK_WRONGTYPE naming what
-- was found, the key byte for byte as it was (type, content, TTL), nothing published. The shape
-- rules live in scripts/lib/lock_shape.lua, rw_shape.lua, fm_shape.lua and count_shape.lua.
--
-- Control: RLK_FOREIGN_PLANT=<script> runs that script with its shape check taken out (the
-- PLANTS table below); the matrix must then fail (ctest busted_foreign_control, WILL_FAIL).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local sa = require("script_asserts")

local r = backend.new()
local K = "{fk}"                      -- the key under test; companions share its slot
local OWNER = "0b5a1e57-9d1c-4c1e-a7a3-1b2c3d4e5f60:1"

-- The foreign values: a setup (as script_asserts.make) and what it is.
local FOREIGN = {
  { "a string", { "SET", "%s", "hello" } },
  { "a JSON string", { "SET", "%s", '{"theme":"dark","retries":3}' } },
  { "a list", { "RPUSH", "%s", "a", "b" } },
  { "a set", { "SADD", "%s", "a", "b" } },
  { "a sorted set", { "ZADD", "%s", "1", "a", "2", "b" } },
  { "a stream", { "XADD", "%s", "1-1", "f", "v" } },
  { "an application hash", { "HSET", "%s", "name", "bob", "email", "bob@example.com" } },
  { "a hash of counts", { "HSET", "%s", "apples", "3", "pears", "5" } },
  { "a one-field hash of a word", { "HSET", "%s", "apples", "3" } },
  { "a hash with mode", { "HSET", "%s", "mode", "dark" } },
}
-- Live keys of each kind (with the TTL their scripts give them, or none where the kind has none).
local LIVE = {
  lock = { "a live reentrant lock", { "HSET", "%s", OWNER, "2" }, 30000 },
  rwlock = { "a live read-write lock", { "HSET", "%s", "mode", "read", OWNER, "1" }, 30000 },
  group = { "a live fastmulti group", { "HSET", "%s", "v1", OWNER, "v1:" .. OWNER .. ":expire_time",
                                         "99999999999999", "v1:" .. OWNER .. ":lock_count", "1" }, 30000 },
  count = { "a live semaphore", { "SET", "%s", "3" } },
}

-- Every script that takes such a key: its keys (K first), its arguments, the kinds whose live keys
-- it refuses, and (acquires of the exclusive locks) those it takes as held: a live key has a TTL,
-- and the cheap path reads no shape of a key with one (it waits; it never writes into it).
local SCRIPTS = {
  { "reentrant/acquire", { K, K .. ":rlk_waiters", K .. ":rlk_next" }, { "30000", "other:7", "0" },
    { "count" }, { "rwlock", "group" } },
  { "reentrant/force_release", { K, "redisson_lock__channel:" .. K }, { "publish" },
    { "rwlock", "group", "count" } },
  { "nonreentrant/acquire", { K }, { "30000", "other:7" }, { "count" }, { "rwlock", "group" } },
  { "fair/acquire", { K, "redisson_lock_queue:" .. K, "redisson_lock_timeout:" .. K },
    { "30000", "other:7", "5000" }, { "count" }, { "rwlock", "group" } },
  { "fair/nonreentrant_acquire", { K, "redisson_lock_queue:" .. K, "redisson_lock_timeout:" .. K },
    { "30000", "other:7", "5000" }, { "count" }, { "rwlock", "group" } },
  { "fair/force_release", { K, "redisson_lock_queue:" .. K, "redisson_lock_timeout:" .. K,
                            "redisson_lock__channel:" .. K }, { "publish" }, { "rwlock", "group", "count" } },
  { "fenced/acquire", { K, "redisson_lock_token:" .. K }, { "30000", "other:7" },
    { "count" }, { "rwlock", "group" } },
  { "elect/campaign", { K, "redisson_lock_token:" .. K, K .. ":elect", "rlk_elect__channel:" .. K },
    { "30000", "other:7", "v", "publish", "s3cr3t" }, { "count" }, { "rwlock", "group" } },
  { "rwlock/read_acquire", { K, K, K .. ":rlk_next" }, { "30000", "other:7" }, { "lock", "group", "count" } },
  { "rwlock/write_acquire", { K, K .. ":rlk_waiters", K .. ":rlk_next" }, { "30000", "other:7", "0" },
    { "lock", "group", "count" } },
  { "rwlock/force_release", { K, "redisson_rwlock:" .. K, K, K .. ":rlk_waiters", K .. ":rlk_next" },
    { "any", "3000", "publish" }, { "lock", "group", "count" } },
  { "fastmulti/acquire", { K }, { "30000", "other:7", "v2" }, { "lock", "rwlock", "count" } },
  { "fastmulti/force_release", { K, "rlk_fastmulti__channel:" .. K }, { "publish", "v2" },
    { "lock", "rwlock", "count" } },
  { "semaphore/expire", { K }, { "60000" }, { "lock", "rwlock", "group" } },
  { "semaphore/clear_expire", { K }, {}, { "lock", "rwlock", "group" } },
  { "psemaphore/expire", { K, K .. ":timeout" }, { "60000" }, { "lock", "rwlock", "group" } },
  { "psemaphore/clear_expire", { K, K .. ":timeout" }, {}, { "lock", "rwlock", "group" } },
  { "latch/expire", { K, "redisson_countdownlatch__channel__" .. K }, { "60000", "publish" },
    { "lock", "rwlock", "group" } },
  { "latch/clear_expire", { K }, {}, { "lock", "rwlock", "group" } },
  { "latch/try_set_count", { K, "redisson_countdownlatch__channel__" .. K }, { "2", "publish" },
    { "lock", "rwlock", "group" } },
}

-- The control: a script's shape check taken out (by text, in the expanded script).
local PLANTS = {
  ["reentrant/force_release"] = { "lock_shape%(lock%)", "nil" },
  ["reentrant/acquire"] = { "local found = lock_shape%(lock%)", "local found = nil" },
  ["fastmulti/acquire"] = { "wrong = fm_shape%(group%)", "wrong = nil" },
  ["semaphore/expire"] = { "local why = count_shape%(semaphore, 'semaphore'%)", "local why = nil" },
  ["latch/try_set_count"] = { "local why = count_shape%(latch, 'latch'%)", "local why = nil" },
}
local plant = os.getenv("RLK_FOREIGN_PLANT")
if plant and plant ~= "" and not PLANTS[plant] then
  error("RLK_FOREIGN_PLANT: no plant for " .. plant)
end

local function run(name, keys, args)
  if name ~= plant then return r:script(name, keys, args) end
  local src, n = backend.read_script(name):gsub(PLANTS[name][1], PLANTS[name][2])
  assert(n > 0, "the plant's text is not in " .. name)
  return r:eval(src, keys, args)
end

-- The script on a key set up by setup (then given ttl ms), all its keys snapshot before: RLK_WRONGTYPE
-- and every key unchanged, nothing published.
local function assert_refused(script, setup, ttl)
  local name, keys, args = script[1], script[2], script[3]
  r:reset()
  sa.make(r, setup, K)
  if ttl then r:call("PEXPIRE", K, tostring(ttl)) end
  r:published()
  local before = sa.snapshot(r, keys)
  local reply = run(name, keys, args)
  sa.assert_error(reply, "RLK_WRONGTYPE")
  sa.assert_unchanged(r, before)
end

before_each(function() r:reset() end)

for _, script in ipairs(SCRIPTS) do
  describe(script[1] .. " on a key it does not own", function()
    for _, f in ipairs(FOREIGN) do
      -- A semaphore's or latch's key is a string: a hash with mode is as foreign to it as to a lock.
      it("refuses " .. f[1] .. " and leaves it as it was", function()
        assert_refused(script, f[2])
      end)
    end
    for _, kind in ipairs(script[4]) do
      local live = LIVE[kind]
      it("refuses " .. live[1] .. " and leaves it as it was", function()
        assert_refused(script, live[2], live[3])
      end)
    end
    for _, kind in ipairs(script[5] or {}) do
      local live = LIVE[kind]
      it("takes " .. live[1] .. " as held (a wait, no write into it)", function()
        sa.make(r, live[2], K)
        r:call("PEXPIRE", K, tostring(live[3]))
        local before = sa.snapshot(r, { K })
        local reply = run(script[1], script[2], script[3])
        if type(reply) == "table" and reply[1] then reply = reply[1] end
        assert.is_number(reply)
        assert.is_true(reply > 0)
        local after = sa.snapshot(r, { K })
        assert.same(before[1].content, after[1].content)
      end)
    end
  end)
end

-- Where shape cannot tell: a one-field hash holder-id -> count without a TTL (a lock someone
-- persisted, or data such as visits user:1 -> 3). An acquire takes it as held; a force unlock
-- refuses it unless the kind is named.
describe("a lock-shaped hash without a TTL", function()
  local LOCK_KEYS = { K, "redisson_lock__channel:" .. K }
  it("is held to reentrant/acquire: the wait -1, nothing changed", function()
    r:call("HSET", K, "user:1", "3")
    local before = sa.snapshot(r, { K })
    assert.equal(-1, run("reentrant/acquire", { K, K .. ":rlk_waiters", K .. ":rlk_next" },
                         { "30000", "other:7", "0" }))
    sa.assert_unchanged(r, before)
  end)
  it("is refused by reentrant/force_release unless named, then deleted", function()
    r:call("HSET", K, "user:1", "3")
    local before = sa.snapshot(r, { K })
    local reply = run("reentrant/force_release", LOCK_KEYS, { "publish" })
    sa.assert_error(reply, "RLK_WRONGTYPE")
    assert.matches("name the kind", reply.err)
    sa.assert_unchanged(r, before)
    assert.equal(1, run("reentrant/force_release", LOCK_KEYS, { "publish", "named" }))
    assert.equal(0, r:call("EXISTS", K))
  end)
  it("named does not make a foreign hash a lock", function()
    r:call("HSET", K, "apples", "3", "pears", "5")
    local before = sa.snapshot(r, { K })
    sa.assert_error(run("reentrant/force_release", LOCK_KEYS, { "publish", "named" }), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
  end)
  it("refuses a named argument other than 'named'", function()
    r:call("HSET", K, "user:1", "3")
    sa.assert_error(run("reentrant/force_release", LOCK_KEYS, { "publish", "yes" }), "RLK_BADARG")
  end)
  it("is removed by reentrant/force_release when it has a TTL (a live lock)", function()
    r:call("HSET", K, "job-7", "1")
    r:call("PEXPIRE", K, "30000")
    assert.equal(1, run("reentrant/force_release", LOCK_KEYS, { "publish" }))
  end)
  it("rwlock/force_release: refused without a TTL unless named", function()
    local keys = { K, "redisson_rwlock:" .. K, K, K .. ":rlk_waiters", K .. ":rlk_next" }
    r:call("HSET", K, "mode", "read", OWNER, "1")
    local before = sa.snapshot(r, keys)
    sa.assert_error(run("rwlock/force_release", keys, { "any", "3000", "publish" }), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
    assert.equal(1, run("rwlock/force_release", keys, { "any", "3000", "publish", "named" }))
  end)
end)
