-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/rwlock/*.lua on the backend RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local helpers = require("support.helpers")
local sa = require("script_asserts")

local NIL = backend.NIL
-- Redisson's names for RReadWriteLock "rw": hash rw, channel redisson_rwlock:{rw}, timeout keys {rw}:...
local LOCK, PREFIX, CHANNEL = "rw", "{rw}", "redisson_rwlock:{rw}"
local A, B, C = "1b9e7c2a-uuid-a:1", "1b9e7c2a-uuid-a:2", "77d0c4e1-uuid-c:9"
local LEASE = 30000
local BIG = 600000
local it_virtual = helpers.it_virtual

local r = backend.new()

local function s(v) return tostring(v or LEASE) end
local function read(owner, lease) return r:script("rwlock/read_acquire", { LOCK, PREFIX }, { s(lease), owner }) end
local function write(owner, lease) return r:script("rwlock/write_acquire", { LOCK }, { s(lease), owner }) end
local function unread(owner, pub)
  return r:script("rwlock/read_release", { LOCK, CHANNEL, PREFIX }, { owner, pub or "publish" })
end
local function unwrite(owner, lease, pub)
  return r:script("rwlock/write_release", { LOCK, CHANNEL, PREFIX }, { owner, s(lease), pub or "publish" })
end
local function renew_readers(lease, ...)
  return r:script("rwlock/renew_readers", { LOCK, PREFIX }, { s(lease), ... })
end
local function renew_writer(owner, lease)
  return r:script("rwlock/renew_writer", { LOCK }, { s(lease), owner })
end
local function force(mode, pub)
  return r:script("rwlock/force_release", { LOCK, CHANNEL, PREFIX }, { mode, pub or "publish" })
end

local function tkey(owner, n) return PREFIX .. ":" .. owner .. ":rwlock_timeout:" .. n end
local function hash()
  local flat, map = r:call("HGETALL", LOCK), {}
  for i = 1, #flat, 2 do map[flat[i]] = flat[i + 1] end
  return map
end
local function pttl(key) return r:call("PTTL", key or LOCK) end
-- Every key the scripts may touch in these specs.
local function all_keys()
  return { LOCK, tkey(A, 1), tkey(A, 2), tkey(A, 3), tkey(B, 1), tkey(B, 2), tkey(C, 1) }
end

-- A bad call: the error code, and no key, TTL or message changed.
local function refused(code, call)
  local before = sa.snapshot(r, all_keys())
  sa.assert_error(call(), code)
  sa.assert_unchanged(r, before)
end

-- A call that must leave everything as it was, with the given reply.
local function no_op(expected, call)
  local before = sa.snapshot(r, all_keys())
  assert.same(expected, call())
  sa.assert_unchanged(r, before)
end

local BAD_OWNERS = { "", string.rep("x", 1025), "mode", A .. ":write" }

-- The checks every script makes on its lock key: other Redis types, and hashes that are not a
-- read-write lock (no mode field, or another mode).
local function wrongtype_cases(call)
  it("refuses a lock key that is not a read-write lock with RLK_WRONGTYPE", function()
    local fixtures = { { "SET", LOCK, "token" }, sa.OTHER_TYPES.list, sa.OTHER_TYPES.set, sa.OTHER_TYPES.zset,
                       { "HSET", LOCK, A, "1" }, { "HSET", LOCK, "mode", "other", A, "1" } }
    for _, make in ipairs(fixtures) do
      r:call("DEL", LOCK)
      sa.make(r, make, LOCK)
      r:call("PEXPIRE", LOCK, "60000")
      refused("RLK_WRONGTYPE", call)
    end
  end)
end

-- Wrong numbers of keys/arguments: RLK_BADARG and nothing changed. cases: { keys, args }.
local function count_cases(name, cases)
  it("refuses the wrong number of keys or arguments", function()
    assert.equal(NIL, read(A, 5000))
    r:published()
    for _, case in ipairs(cases) do
      refused("RLK_BADARG", function() return r:script(name, case[1], case[2]) end)
    end
  end)
end

-- A prefix that is not the lock's: RLK_BADARG and nothing changed. call(prefix).
local function prefix_cases(call)
  it("refuses a timeout-key prefix other than {lock} with RLK_BADARG", function()
    assert.equal(NIL, read(A, 5000))
    r:published()
    for _, prefix in ipairs({ LOCK, "{other}", "{rw}:x", "", "{rw" }) do
      refused("RLK_BADARG", function() return call(prefix) end)
    end
  end)
end

-- Bad leases and owners. call(lease, owner).
local function argument_cases(call, with_lease)
  describe("refuses bad arguments without changing anything", function()
    before_each(function()
      assert.equal(NIL, read(A, 5000))
      assert.equal(NIL, read(B, 5000))
      r:published()
    end)

    if with_lease then
      it("a lease that is not an integer in 1..10^12", function()
        for _, lease in ipairs(sa.BAD_LEASES) do
          refused("RLK_BADLEASE", function() return call(lease, A) end)
        end
      end)
    end

    it("an owner that is empty, longer than 1024 bytes, 'mode' or ends in ':write'", function()
      for _, owner in ipairs(BAD_OWNERS) do
        refused("RLK_BADOWNER", function() return call("60000", owner) end)
      end
    end)
  end)
end

before_each(function() r:reset() end)

describe("rwlock/read_acquire", function()
  it("takes a free lock: mode read, count 1, timeout key 1, hash TTL = lease", function()
    assert.equal(NIL, read(A))
    assert.same({ mode = "read", [A] = "1" }, hash())
    assert.equal("1", r:call("GET", tkey(A, 1)))
    sa.assert_pttl(r, tkey(A, 1), LEASE, LEASE - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, LOCK, LEASE, LEASE - sa.TTL_SLACK_MS)
  end)

  it("re-enters: one timeout key per read, the hash TTL only rises", function()
    assert.equal(NIL, read(A, 2000))
    assert.equal(NIL, read(A, BIG))
    assert.equal("2", hash()[A])
    sa.assert_pttl(r, tkey(A, 1), 2000)
    sa.assert_pttl(r, tkey(A, 2), BIG, BIG - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
    assert.equal(NIL, read(A, 1000))
    assert.equal("3", hash()[A])
    sa.assert_pttl(r, tkey(A, 3), 1000)
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
  end)

  it("shares with other readers", function()
    assert.equal(NIL, read(A))
    assert.equal(NIL, read(B))
    assert.equal(NIL, read(C))
    assert.same({ mode = "read", [A] = "1", [B] = "1", [C] = "1" }, hash())
    for _, o in ipairs({ A, B, C }) do assert.equal("1", r:call("GET", tkey(o, 1))) end
  end)

  it("lets the write holder take reads; the mode stays write", function()
    assert.equal(NIL, write(A, BIG))
    assert.equal(NIL, read(A, 1000))
    assert.equal(NIL, read(A, 1000))
    assert.same({ mode = "write", [A .. ":write"] = "1", [A] = "2" }, hash())
    sa.assert_pttl(r, tkey(A, 2), 1000)
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
  end)

  it("refuses while another owner writes: the lock's PTTL, nothing changed", function()
    assert.equal(NIL, write(A, 20000))
    local before = sa.snapshot(r, all_keys())
    local ttl = read(B, BIG)
    assert.is_number(ttl)
    assert.is_true(ttl > 0 and ttl <= 20000, "PTTL reply " .. ttl)
    sa.assert_unchanged(r, before)
  end)

  it("replies -1 when the writer's hash has no TTL", function()
    r:call("HSET", LOCK, "mode", "write", B .. ":write", "1")
    assert.equal(-1, read(A))
    assert.same({ mode = "write", [B .. ":write"] = "1" }, hash())
  end)

  it("overwrites a leftover timeout key of the same index (a string)", function()
    r:call("SET", tkey(A, 1), "stale", "PX", "900000")
    assert.equal(NIL, read(A, 1000))
    assert.equal("1", r:call("GET", tkey(A, 1)))
    sa.assert_pttl(r, tkey(A, 1), 1000)
  end)

  it("accepts the smallest and the largest lease and an owner of 1024 bytes", function()
    local owner = string.rep("o", 1024)
    assert.equal(NIL, read(owner, "1000000000000"))
    sa.assert_pttl(r, LOCK, 1e12, 1e12 - sa.TTL_SLACK_MS)
    assert.equal(NIL, read(A, "1"))
    assert.is_true(pttl(tkey(A, 1)) <= 1)
    assert.equal("1", hash()[owner])
  end)

  it("derives the timeout keys from a lock name that carries its own hash tag", function()
    local lock = "{app}:rw"
    assert.equal(NIL, r:script("rwlock/read_acquire", { lock, lock }, { "5000", A }))
    assert.equal("1", r:call("GET", lock .. ":" .. A .. ":rwlock_timeout:1"))
    sa.assert_error(r:script("rwlock/read_acquire", { lock, "{{app}:rw}" }, { "5000", A }), "RLK_BADARG")
  end)

  it("refuses a timeout key of another type with RLK_WRONGTYPE", function()
    assert.equal(NIL, read(A, 5000))
    for _, kind in ipairs({ "list", "set", "zset" }) do
      r:call("DEL", tkey(A, 2))
      sa.make(r, sa.OTHER_TYPES[kind], tkey(A, 2))
      refused("RLK_WRONGTYPE", function() return read(A) end)
    end
  end)

  it_virtual("lets a reader in once the writer's lease ran out", function()
    assert.equal(NIL, write(A, 1000))
    r:advance(999)
    assert.equal(1, read(B))
    r:advance(2)
    assert.equal(NIL, read(B))
    assert.same({ mode = "read", [B] = "1" }, hash())
  end)

  wrongtype_cases(function() return read(A) end)
  prefix_cases(function(prefix) return r:script("rwlock/read_acquire", { LOCK, prefix }, { "1000", A }) end)
  argument_cases(function(lease, owner) return read(owner, lease) end, true)
  count_cases("rwlock/read_acquire", {
    { { LOCK }, { "1000", A } },
    { { LOCK, PREFIX, "x" }, { "1000", A } },
    { { LOCK, PREFIX }, { "1000" } },
    { { LOCK, PREFIX }, { "1000", A, A .. ":write" } },
  })
end)

describe("rwlock/write_acquire", function()
  it("takes a free lock: mode write, <owner>:write 1, TTL = lease", function()
    assert.equal(NIL, write(A))
    assert.same({ mode = "write", [A .. ":write"] = "1" }, hash())
    sa.assert_pttl(r, LOCK, LEASE, LEASE - sa.TTL_SLACK_MS)
  end)

  it("re-enters: count + 1, the TTL only rises", function()
    assert.equal(NIL, write(A, 2000))
    assert.equal(NIL, write(A, BIG))
    assert.equal("2", hash()[A .. ":write"])
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
    assert.equal(NIL, write(A, 1000))
    assert.equal("3", hash()[A .. ":write"])
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
  end)

  it("re-enters after the writer took reads", function()
    assert.equal(NIL, write(A))
    assert.equal(NIL, read(A))
    assert.equal(NIL, write(A))
    assert.same({ mode = "write", [A .. ":write"] = "2", [A] = "1" }, hash())
  end)

  it("refuses another writer with the PTTL and changes nothing", function()
    assert.equal(NIL, write(A, 20000))
    local before = sa.snapshot(r, all_keys())
    local ttl = write(B, BIG)
    assert.is_true(type(ttl) == "number" and ttl > 0 and ttl <= 20000)
    sa.assert_unchanged(r, before)
  end)

  it("refuses while others read, with the PTTL", function()
    assert.equal(NIL, read(B, 20000))
    assert.equal(NIL, read(C, 10000))
    local before = sa.snapshot(r, all_keys())
    local ttl = write(A, BIG)
    assert.is_true(type(ttl) == "number" and ttl > 0 and ttl <= 20000)
    sa.assert_unchanged(r, before)
  end)

  it("replies RLK_UPGRADE to a reader, alone or among others, and changes nothing", function()
    assert.equal(NIL, read(A))
    refused("RLK_UPGRADE", function() return write(A) end)
    assert.equal(NIL, read(B))
    refused("RLK_UPGRADE", function() return write(A) end)
    refused("RLK_UPGRADE", function() return write(B) end)
  end)

  it("replies -1 when the holder's hash has no TTL", function()
    r:call("HSET", LOCK, "mode", "read", B, "1")
    assert.equal(-1, write(A))
  end)

  it("accepts the smallest and the largest lease and an owner of 1024 bytes", function()
    local owner = string.rep("o", 1024)
    assert.equal(NIL, write(owner, "1000000000000"))
    sa.assert_pttl(r, LOCK, 1e12, 1e12 - sa.TTL_SLACK_MS)
    r:call("DEL", LOCK)
    assert.equal(NIL, write(A, "1"))
    assert.is_true(pttl() <= 1)
  end)

  it_virtual("lets a writer in once every reader's lease ran out", function()
    assert.equal(NIL, read(B, 1000))
    r:advance(1001)
    assert.equal(NIL, write(A))
    assert.same({ mode = "write", [A .. ":write"] = "1" }, hash())
  end)

  wrongtype_cases(function() return write(A) end)
  argument_cases(function(lease, owner) return write(owner, lease) end, true)
  count_cases("rwlock/write_acquire", {
    { {}, { "1000", A } },
    { { LOCK, PREFIX }, { "1000", A } },
    { { LOCK }, { "1000" } },
    { { LOCK }, { "1000", A, "x" } },
  })
end)

describe("rwlock/read_release", function()
  it("releases the last read: hash and timeout key deleted, 0 published", function()
    assert.equal(NIL, read(A))
    r:published()
    assert.equal(1, unread(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.equal(0, r:call("EXISTS", tkey(A, 1)))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
  end)

  it("leaves one re-entry: the highest timeout key deleted, hash TTL = the longest left", function()
    assert.equal(NIL, read(A, 20000))
    assert.equal(NIL, read(A, BIG))
    r:published()
    assert.equal(0, unread(A))
    assert.same({ mode = "read", [A] = "1" }, hash())
    assert.equal(0, r:call("EXISTS", tkey(A, 2)))
    sa.assert_pttl(r, LOCK, 20000, 20000 - sa.TTL_SLACK_MS)
    assert.same({}, r:published())
  end)

  it("leaves the lock to the other readers, nothing published", function()
    assert.equal(NIL, read(A, BIG))
    assert.equal(NIL, read(B, 20000))
    r:published()
    assert.equal(0, unread(A))
    assert.same({ mode = "read", [B] = "1" }, hash())
    sa.assert_pttl(r, LOCK, 20000, 20000 - sa.TTL_SLACK_MS)
    assert.same({}, r:published())
    assert.equal(1, unread(B))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
  end)

  it("counts every re-entry of every reader, not only the latest", function()
    assert.equal(NIL, read(A, BIG))
    assert.equal(NIL, read(A, 1000))
    assert.equal(NIL, read(B, 5000))
    assert.equal(0, unread(B))
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
  end)

  it("leaves a read of the writer without touching the write lease", function()
    assert.equal(NIL, write(A, BIG))
    assert.equal(NIL, read(A, 1000))
    assert.equal(NIL, read(A, 2000))
    r:published()
    assert.equal(0, unread(A))
    assert.equal(0, unread(A))
    assert.same({ mode = "write", [A .. ":write"] = "1" }, hash())
    assert.equal(0, r:call("EXISTS", tkey(A, 1)))
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
    assert.same({}, r:published())
  end)

  it("replies nil to an owner without a read and changes nothing", function()
    assert.equal(NIL, read(A))
    r:published()
    no_op(NIL, function() return unread(B) end)
    r:call("DEL", LOCK, tkey(A, 1))
    assert.equal(NIL, write(C))                      -- a writer without reads
    r:published()
    no_op(NIL, function() return unread(C) end)
  end)

  it("replies nil when there is no lock, creates nothing and publishes nothing", function()
    no_op(NIL, function() return unread(A) end)
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  it_virtual("sets the hash TTL to the longest live read over several readers and re-entries", function()
    assert.equal(NIL, read(A, 10000))
    assert.equal(NIL, read(B, 30000))
    assert.equal(NIL, read(A, 20000))
    assert.equal(NIL, read(C, 5000))
    assert.equal(30000, pttl())
    r:advance(1000)
    assert.equal(0, unread(C))
    assert.equal(29000, pttl())           -- B's read
    assert.equal(0, unread(B))
    assert.equal(19000, pttl())           -- A's second read
    assert.equal(0, unread(A))
    assert.equal(9000, pttl())            -- A's first read
    assert.same({ mode = "read", [A] = "1" }, hash())
    r:advance(8500)
    assert.equal(500, pttl())
    assert.equal(1, unread(A))
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  it_virtual("counts a reader whose timeout keys all expired as gone", function()
    assert.equal(NIL, read(A, 1000))
    assert.equal(NIL, read(B, 5000))
    assert.equal(NIL, read(C, 3000))
    r:advance(2000)
    r:published()
    assert.equal(0, unread(C))
    assert.equal(3000, pttl())            -- B's read; A's expired read does not count
    assert.equal(1, unread(B))            -- only A's dead read is left: the lock goes
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    assert.equal(NIL, write(C))
  end)

  it_virtual("keeps the lock for a read in its last millisecond (PTTL 0: Redis still has the key)", function()
    assert.equal(NIL, read(A, 1000))
    assert.equal(NIL, read(B, 5000))
    r:advance(1000)
    assert.equal(0, pttl(tkey(A, 1)))     -- expires when the clock passes it, not before
    r:published()
    assert.equal(0, unread(B))            -- A's read is live: the lock stays (Redisson deletes it)
    assert.same({ mode = "read", [A] = "1" }, hash())
    assert.equal(1, pttl())               -- PEXPIRE 0 would delete: 1 ms, outliving A's key by 1 ms
    assert.same({}, r:published())
    assert.is_number(write(C))            -- no writer in that millisecond
    r:advance(1)
    assert.equal(0, r:call("EXISTS", tkey(A, 1)))
    assert.is_number(write(C))            -- the hash's own last millisecond
    r:advance(1)
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.equal(NIL, write(C))
  end)

  it_virtual("replies nil once the lock expired", function()
    assert.equal(NIL, read(A, 1000))
    r:advance(1001)
    r:published()
    assert.equal(NIL, unread(A))
    assert.same({}, r:published())
  end)

  wrongtype_cases(function() return unread(A) end)
  prefix_cases(function(prefix) return r:script("rwlock/read_release", { LOCK, CHANNEL, prefix }, { A, "publish" }) end)
  argument_cases(function(_, owner) return unread(owner) end, false)
  count_cases("rwlock/read_release", {
    { { LOCK, CHANNEL }, { A, "publish" } },
    { { LOCK, CHANNEL, PREFIX, "x" }, { A, "publish" } },
    { { LOCK, CHANNEL, PREFIX }, {} },
    { { LOCK, CHANNEL, PREFIX }, { A } },
    { { LOCK, CHANNEL, PREFIX }, { A, "publish", "30000" } },
  })
  sa.publish_cases(r, { LOCK, tkey(A, 1) }, function() assert.equal(NIL, read(A)) end,
    function(pub) return unread(A, pub) end, CHANNEL)
end)

describe("rwlock/write_release", function()
  it("releases the last write without reads: hash deleted, 1 published", function()
    assert.equal(NIL, write(A))
    r:published()
    assert.equal(1, unwrite(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
  end)

  it("leaves one re-entry: count - 1, TTL raised to at least the lease, nothing published", function()
    assert.equal(NIL, write(A, 2000))
    assert.equal(NIL, write(A, 2000))
    r:published()
    assert.equal(0, unwrite(A, BIG))
    assert.equal("1", hash()[A .. ":write"])
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
    assert.equal(NIL, write(A, 2000))
    assert.equal(0, unwrite(A, 1))
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
    assert.same({}, r:published())
  end)

  it("downgrades to the writer's reads: mode read, TTL = its longest read, 1 published", function()
    assert.equal(NIL, write(A, BIG))
    assert.equal(NIL, read(A, 20000))
    r:published()
    assert.equal(1, unwrite(A))
    assert.same({ mode = "read", [A] = "1" }, hash())
    sa.assert_pttl(r, LOCK, 20000, 20000 - sa.TTL_SLACK_MS)
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
    assert.equal(NIL, read(B))                       -- readers share with the downgraded read
    assert.is_number(write(C))
    assert.equal(0, unread(A))
    assert.equal(1, unread(B))
  end)

  it_virtual("downgrades to a read in its last millisecond (PTTL 0) with a 1 ms hash TTL", function()
    assert.equal(NIL, write(A, BIG))
    assert.equal(NIL, read(A, 1000))
    r:advance(1000)
    assert.equal(0, pttl(tkey(A, 1)))
    r:published()
    assert.equal(1, unwrite(A))
    assert.same({ mode = "read", [A] = "1" }, hash())
    assert.equal(1, pttl())
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
    assert.is_number(write(C))
    r:advance(2)
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.equal(NIL, write(C))
  end)

  it_virtual("deletes the hash when the writer's only read expired a millisecond ago", function()
    assert.equal(NIL, write(A, BIG))
    assert.equal(NIL, read(A, 1000))
    r:advance(1001)
    assert.equal(-2, pttl(tkey(A, 1)))
    assert.equal(1, unwrite(A))
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  it("replies nil to another owner, to a reader and without a lock, changing nothing", function()
    assert.equal(NIL, write(A))
    r:published()
    no_op(NIL, function() return unwrite(B) end)
    r:call("DEL", LOCK)
    assert.equal(NIL, read(B))
    r:published()
    no_op(NIL, function() return unwrite(B) end)
    r:call("DEL", LOCK, tkey(B, 1))
    no_op(NIL, function() return unwrite(A) end)
  end)

  it("checks the lease even when the call would release the lock", function()
    assert.equal(NIL, write(A))
    r:published()
    refused("RLK_BADLEASE", function() return unwrite(A, "0") end)
  end)

  it_virtual("deletes the lock when the writer's reads expired before the write release", function()
    assert.equal(NIL, write(A, BIG))
    assert.equal(NIL, read(A, 1000))
    r:advance(1001)
    r:published()
    assert.equal(1, unwrite(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
  end)

  wrongtype_cases(function() return unwrite(A) end)
  prefix_cases(function(prefix)
    return r:script("rwlock/write_release", { LOCK, CHANNEL, prefix }, { A, "1000", "publish" })
  end)
  argument_cases(function(lease, owner) return unwrite(owner, lease) end, true)
  count_cases("rwlock/write_release", {
    { { LOCK, CHANNEL }, { A, "1000", "publish" } },
    { { LOCK, CHANNEL, PREFIX, "x" }, { A, "1000", "publish" } },
    { { LOCK, CHANNEL, PREFIX }, { A } },
    { { LOCK, CHANNEL, PREFIX }, { A, "1000" } },
    { { LOCK, CHANNEL, PREFIX }, { A, "1000", "publish", "0" } },
  })
  sa.publish_cases(r, { LOCK }, function() assert.equal(NIL, write(A)) end,
    function(pub) return unwrite(A, nil, pub) end, CHANNEL)
end)

describe("rwlock/renew_readers", function()
  it("renews every read of the owner and only the owner's; the hash TTL rises", function()
    assert.equal(NIL, read(A, 2000))
    assert.equal(NIL, read(A, 3000))
    assert.equal(NIL, read(B, 2000))
    assert.same({ 1 }, renew_readers(BIG, A))
    sa.assert_pttl(r, tkey(A, 1), BIG, BIG - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, tkey(A, 2), BIG, BIG - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, tkey(B, 1), 2000)
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
  end)

  it("renews several owners in one call, 0 for an owner without reads", function()
    assert.equal(NIL, read(A, 2000))
    assert.equal(NIL, read(B, 2000))
    assert.equal(NIL, read(B, 2000))
    assert.same({ 1, 0, 1 }, renew_readers(BIG, A, C, B))
    for _, k in ipairs({ tkey(A, 1), tkey(B, 1), tkey(B, 2) }) do
      sa.assert_pttl(r, k, BIG, BIG - sa.TTL_SLACK_MS)
    end
    assert.equal(0, r:call("EXISTS", tkey(C, 1)))
  end)

  it("renews the reads of the write holder", function()
    assert.equal(NIL, write(A, 2000))
    assert.equal(NIL, read(A, 2000))
    assert.same({ 1 }, renew_readers(BIG, A))
    sa.assert_pttl(r, tkey(A, 1), BIG, BIG - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
  end)

  it("never shortens the hash TTL", function()
    assert.equal(NIL, read(A, BIG))
    assert.equal(NIL, read(B, BIG))
    assert.same({ 1 }, renew_readers(1000, A))
    sa.assert_pttl(r, tkey(A, 1), 1000)
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
  end)

  it("replies zeros and changes nothing when no owner reads, or there is no lock", function()
    no_op({ 0, 0 }, function() return renew_readers(BIG, A, B) end)
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.equal(NIL, write(C, 5000))
    no_op({ 0 }, function() return renew_readers(BIG, C) end)
  end)

  it_virtual("replies 0 for an owner one of whose reads expired, renewing the others", function()
    assert.equal(NIL, read(A, 1000))
    assert.equal(NIL, read(A, 5000))
    assert.equal(NIL, read(B, 1000))
    r:advance(1001)
    assert.same({ 0, 0 }, renew_readers(BIG, A, B))
    assert.equal(BIG, pttl(tkey(A, 2)))
    assert.equal(-2, pttl(tkey(A, 1)))
    assert.equal(BIG, pttl())
  end)

  it_virtual("does not renew the hash when no read was renewed", function()
    assert.equal(NIL, read(A, 1000))
    assert.equal(NIL, read(B, 5000))
    r:advance(1001)
    assert.same({ 0 }, renew_readers(BIG, A))
    assert.equal(3999, pttl())
  end)

  wrongtype_cases(function() return renew_readers(LEASE, A) end)
  prefix_cases(function(prefix) return r:script("rwlock/renew_readers", { LOCK, prefix }, { "1000", A }) end)
  argument_cases(function(lease, owner) return renew_readers(lease, owner) end, true)

  it("checks every owner before renewing any", function()
    assert.equal(NIL, read(A, 5000))
    assert.equal(NIL, read(B, 5000))
    for _, owner in ipairs(BAD_OWNERS) do
      refused("RLK_BADOWNER", function() return renew_readers(BIG, A, owner, B) end)
    end
  end)

  count_cases("rwlock/renew_readers", {
    { { LOCK, PREFIX }, { "1000" } },
    { { LOCK }, { "1000", A } },
    { { LOCK, PREFIX, "x" }, { "1000", A } },
    { {}, { "1000", A } },
  })
end)

describe("rwlock/renew_writer", function()
  it("renews the writer: replies 1 and raises the TTL to at least the lease", function()
    assert.equal(NIL, write(A, 2000))
    assert.equal(1, renew_writer(A, BIG))
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
    assert.equal(1, renew_writer(A, 1000))
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
  end)

  it("replies 0 and changes nothing for another owner, a reader, or no lock", function()
    no_op(0, function() return renew_writer(A) end)
    assert.equal(NIL, write(A, 5000))
    no_op(0, function() return renew_writer(B, BIG) end)
    r:call("DEL", LOCK)
    assert.equal(NIL, read(A, 5000))
    no_op(0, function() return renew_writer(A, BIG) end)
  end)

  it_virtual("replies 0 once the lease ran out", function()
    assert.equal(NIL, write(A, 1000))
    r:advance(1001)
    assert.equal(0, renew_writer(A))
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  wrongtype_cases(function() return renew_writer(A) end)
  argument_cases(function(lease, owner) return renew_writer(owner, lease) end, true)
  count_cases("rwlock/renew_writer", {
    { {}, { "1000", A } },
    { { LOCK, PREFIX }, { "1000", A } },
    { { LOCK }, { "1000" } },
    { { LOCK }, { "1000", A, "x" } },
  })
end)

describe("rwlock/force_release", function()
  it("deletes a read lock and every reader's timeout keys; publishes 0", function()
    assert.equal(NIL, read(A))
    assert.equal(NIL, read(A))
    assert.equal(NIL, read(B))
    r:published()
    assert.equal(1, force("read"))
    for _, k in ipairs(all_keys()) do assert.equal(0, r:call("EXISTS", k), k) end
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    assert.equal(NIL, unread(A))
  end)

  it("deletes a write lock and the writer's reads; publishes 1", function()
    assert.equal(NIL, write(A))
    assert.equal(NIL, read(A))
    r:published()
    assert.equal(1, force("write"))
    for _, k in ipairs(all_keys()) do assert.equal(0, r:call("EXISTS", k), k) end
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
  end)

  it("deletes in either mode with 'any'", function()
    assert.equal(NIL, write(A))
    assert.equal(1, force("any"))
    assert.equal(NIL, read(A))
    assert.equal(1, force("any"))
    assert.same({ { channel = CHANNEL, message = "1" }, { channel = CHANNEL, message = "0" } }, r:published())
  end)

  it("replies 0 and changes nothing for the other mode or no lock", function()
    no_op(0, function() return force("any") end)
    assert.equal(NIL, write(A))
    r:published()
    no_op(0, function() return force("read") end)
    r:call("DEL", LOCK)
    assert.equal(NIL, read(A))
    r:published()
    no_op(0, function() return force("write") end)
  end)

  wrongtype_cases(function() return force("any") end)
  prefix_cases(function(prefix)
    return r:script("rwlock/force_release", { LOCK, CHANNEL, prefix }, { "any", "publish" })
  end)

  it("refuses a mode other than read, write or any", function()
    assert.equal(NIL, read(A))
    r:published()
    for _, mode in ipairs({ "", "READ", "both", "read " }) do
      refused("RLK_BADARG", function() return force(mode) end)
    end
  end)

  count_cases("rwlock/force_release", {
    { { LOCK, CHANNEL }, { "any", "publish" } },
    { { LOCK, CHANNEL, PREFIX, "x" }, { "any", "publish" } },
    { { LOCK, CHANNEL, PREFIX }, {} },
    { { LOCK, CHANNEL, PREFIX }, { "any" } },
    { { LOCK, CHANNEL, PREFIX }, { "any", "publish", "x" } },
  })
  sa.publish_cases(r, { LOCK }, function() assert.equal(NIL, write(A)) end,
    function(pub) return force("write", pub) end, CHANNEL)
  sa.publish_cases(r, { LOCK, tkey(A, 1) }, function() assert.equal(NIL, read(A)) end,
    function(pub) return force("read", pub) end, CHANNEL)
end)

describe("read-write lock life cycle", function()
  it("readers share, a writer waits for the last one, readers wait for the writer", function()
    assert.equal(NIL, read(A))
    assert.equal(NIL, read(B))
    assert.is_number(write(C))
    assert.equal(0, unread(A))
    assert.is_number(write(C))
    assert.equal(1, unread(B))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    assert.equal(NIL, write(C))
    assert.is_number(read(A))
    assert.equal(NIL, read(C))                       -- the writer takes a read
    assert.equal(1, unwrite(C))                      -- and keeps it: downgrade, readers woken
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
    assert.equal(NIL, read(A))
    assert.equal(0, unread(C))
    assert.equal(1, unread(A))
    assert.equal(NIL, write(B))
    assert.same({ mode = "write", [B .. ":write"] = "1" }, hash())
  end)
end)
