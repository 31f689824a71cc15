-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/rwlock/*.lua on the backend RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local helpers = require("support.helpers")
local sa = require("script_asserts")

local NIL = backend.NIL
-- Redisson's names for RReadWriteLock "rw": hash rw, channel redisson_rwlock:{rw}, timeout keys {rw}:...
local LOCK, PREFIX, CHANNEL = "rw", "{rw}", "redisson_rwlock:{rw}"
-- rlk's companion keys of the writers' queue (docs/compat.md)
local WAITERS, GRANT = "{rw}:rlk_waiters", "{rw}:rlk_next"
local CLAIM = 5000   -- a grant outlives a busy machine's pause between two steps on a real server
local A, B, C = "1b9e7c2a-uuid-a:1", "1b9e7c2a-uuid-a:2", "77d0c4e1-uuid-c:9"
local LEASE = 30000
local BIG = 600000
local it_virtual = helpers.it_virtual

local r = backend.new()

local function s(v) return tostring(v or LEASE) end
local function read(owner, lease)
  return r:script("rwlock/read_acquire", { LOCK, PREFIX, GRANT }, { s(lease), owner })
end
local function write(owner, lease, ticket)
  return r:script("rwlock/write_acquire", { LOCK, WAITERS, GRANT }, { s(lease), owner, tostring(ticket or 0) })
end
local function unread(owner, pub)
  return r:script("rwlock/read_release", { LOCK, CHANNEL, PREFIX, WAITERS, GRANT },
    { owner, s(CLAIM), pub or "publish" })
end
local function unwrite(owner, lease, pub)
  return r:script("rwlock/write_release", { LOCK, CHANNEL, PREFIX, WAITERS, GRANT },
    { owner, s(lease), s(CLAIM), pub or "publish" })
end
local function cancel(ticket, pub)
  return r:script("rwlock/cancel", { LOCK, CHANNEL, WAITERS, GRANT }, { tostring(ticket), s(CLAIM), pub or "publish" })
end
local function renew_readers(lease, ...)
  return r:script("rwlock/renew_readers", { LOCK, PREFIX }, { s(lease), ... })
end
local function renew_writer(owner, lease)
  return r:script("rwlock/renew_writer", { LOCK }, { s(lease), owner })
end
local function force(mode, pub)
  return r:script("rwlock/force_release", { LOCK, CHANNEL, PREFIX, WAITERS, GRANT },
    { mode, s(CLAIM), pub or "publish" })
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
  return { LOCK, tkey(A, 1), tkey(A, 2), tkey(A, 3), tkey(B, 1), tkey(B, 2), tkey(C, 1), WAITERS, GRANT }
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
    local grant = "{app}:rw:rlk_next"
    assert.equal(NIL, r:script("rwlock/read_acquire", { lock, lock, grant }, { "5000", A }))
    assert.equal("1", r:call("GET", lock .. ":" .. A .. ":rwlock_timeout:1"))
    sa.assert_error(r:script("rwlock/read_acquire", { lock, "{{app}:rw}", grant }, { "5000", A }), "RLK_BADARG")
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
  prefix_cases(function(prefix) return r:script("rwlock/read_acquire", { LOCK, prefix, GRANT }, { "1000", A }) end)
  argument_cases(function(lease, owner) return read(owner, lease) end, true)
  count_cases("rwlock/read_acquire", {
    { { LOCK, PREFIX }, { "1000", A } },
    { { LOCK, PREFIX, GRANT, "x" }, { "1000", A } },
    { { LOCK, PREFIX, GRANT }, { "1000" } },
    { { LOCK, PREFIX, GRANT }, { "1000", A, A .. ":write" } },
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
    { {}, { "1000", A, "0" } },
    { { LOCK }, { "1000", A } },
    { { LOCK, WAITERS, GRANT }, { "1000", A } },
    { { LOCK, WAITERS, GRANT }, { "1000", A, "0", "x" } },
    { { LOCK, WAITERS }, { "1000", A, "0" } },
  })
  it("refuses a ticket that is not an integer in -67108863..67108863", function()
    assert.equal(NIL, read(A, 5000))
    r:published()
    for _, t in ipairs({ "x", "1.5", "67108864", "-67108864", "01", " 1", "" }) do
      refused("RLK_BADARG", function() return write(B, nil, t) end)
    end
  end)
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

  it("leaves one re-entry: the highest timeout key deleted, its longer TTL kept by the read left", function()
    assert.equal(NIL, read(A, 20000))
    assert.equal(NIL, read(A, BIG))
    r:published()
    assert.equal(0, unread(A))
    assert.same({ mode = "read", [A] = "1" }, hash())
    assert.equal(0, r:call("EXISTS", tkey(A, 2)))
    -- one holder id, two processes: the read that left may be the 20 s one (never shortened)
    sa.assert_pttl(r, tkey(A, 1), BIG, BIG - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
    assert.same({}, r:published())
  end)

  it("leaves one re-entry: a shorter TTL of the highest key does not cut the read left", function()
    assert.equal(NIL, read(A, BIG))
    assert.equal(NIL, read(A, 20000))
    assert.equal(0, unread(A))
    sa.assert_pttl(r, tkey(A, 1), BIG, BIG - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
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
    assert.equal(19000, pttl())           -- A's read left keeps the longer of its two (never cut)
    assert.same({ mode = "read", [A] = "1" }, hash())
    r:advance(18500)
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
  prefix_cases(function(prefix)
    return r:script("rwlock/read_release", { LOCK, CHANNEL, prefix, WAITERS, GRANT }, { A, "50", "publish" })
  end)
  argument_cases(function(_, owner) return unread(owner) end, false)
  count_cases("rwlock/read_release", {
    { { LOCK, CHANNEL, PREFIX }, { A, "50", "publish" } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT, "x" }, { A, "50", "publish" } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT }, {} },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT }, { A, "publish" } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT }, { A, "50", "publish", "30000" } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT }, { A, "0", "publish" } },
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
    return r:script("rwlock/write_release", { LOCK, CHANNEL, prefix, WAITERS, GRANT }, { A, "1000", "50", "publish" })
  end)
  argument_cases(function(lease, owner) return unwrite(owner, lease) end, true)
  count_cases("rwlock/write_release", {
    { { LOCK, CHANNEL, PREFIX }, { A, "1000", "50", "publish" } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT, "x" }, { A, "1000", "50", "publish" } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT }, { A } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT }, { A, "1000", "publish" } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT }, { A, "1000", "50", "publish", "0" } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT }, { A, "1000", "0", "publish" } },
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

  it("never shortens the hash TTL nor a read's", function()
    assert.equal(NIL, read(A, BIG))
    assert.equal(NIL, read(B, BIG))
    assert.same({ 1 }, renew_readers(1000, A))
    sa.assert_pttl(r, tkey(A, 1), BIG, BIG - sa.TTL_SLACK_MS)
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
    return r:script("rwlock/force_release", { LOCK, CHANNEL, prefix, WAITERS, GRANT }, { "any", "50", "publish" })
  end)

  it("refuses a mode other than read, write or any", function()
    assert.equal(NIL, read(A))
    r:published()
    for _, mode in ipairs({ "", "READ", "both", "read " }) do
      refused("RLK_BADARG", function() return force(mode) end)
    end
  end)

  count_cases("rwlock/force_release", {
    { { LOCK, CHANNEL, PREFIX }, { "any", "50", "publish" } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT, "x" }, { "any", "50", "publish" } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT }, {} },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT }, { "any", "publish" } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT }, { "any", "50", "publish", "x" } },
    { { LOCK, CHANNEL, PREFIX, WAITERS, GRANT }, { "any", "0", "publish" } },
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

-- The writers' queue (docs/locks/rwlock.md, "Waiting writers"): a waiting writer's ticket joins
-- {rw}:rlk_waiters; a release that frees the lock (the last write, the last read, a force release)
-- reserves it for the first ticket ({rw}:rlk_next, PX claim window), grants it on that ticket's
-- wake channel (head * 2^26) and then publishes the usual 0 or 1 on the lock's channel. Neither
-- readers nor other writers take a lock reserved for a writer.
describe("rwlock writers' queue and handoff", function()
  local D = "1b9e7c2a-uuid-d:4"
  local SHIFT = 67108864
  local W = 33554432
  local function tk(n) return string.format("%d", W + n) end
  local function wake(t) return CHANNEL .. ":rlk:" .. string.format("%d", math.floor(t / 1024)) end
  local function grant_msg(head) return string.format("%.0f", head * SHIFT) end
  local function first_in_queue(rep)
    return type(rep) == "table" and #rep == 2 and type(rep[1]) == "number" and rep[2] == 1
  end
  local function queue() return r:call("LRANGE", WAITERS, "0", "-1") end

  it("queues waiting writers in arrival order, once each, only when they ask to wait", function()
    assert.equal(NIL, write(A))
    assert.is_number(write(B, nil, 0))
    assert.equal(0, r:call("EXISTS", WAITERS))
    assert.is_true(first_in_queue(write(B, nil, 11)))     -- first: told so
    assert.is_number(write(C, nil, 22))
    assert.is_true(first_in_queue(write(B, nil, -11)))    -- queued already: stays first
    assert.is_number(write(C, nil, -22))
    assert.same({ "11", "22" }, queue())
    assert.is_true(pttl(WAITERS) > 0, "the queue expires when nobody comes any more")
  end)

  -- What the usual write calls cost the server, command by command (sa.count_commands): the
  -- release reads mode, count and the owner's reads by HGET (a key of another type fails the
  -- first and is refused by the general case), and a release that hands over reads nothing twice.
  it("the usual write runs 4 commands and its release 6, with no TYPE; a handoff's release 8", function()
    local rep, _, total = sa.count_commands(r, function() return write(A) end)
    local counts
    assert.equal(NIL, rep)
    assert.equal(4, total)
    rep, counts, total = sa.count_commands(r, function() return unwrite(A) end)
    assert.equal(1, rep)
    assert.is_nil(counts.type)
    assert.equal(3, counts.hget)
    assert.equal(6, total)
    assert.equal(0, r:call("EXISTS", LOCK))
    write(A)
    write(B, nil, W + 11)
    rep, counts, total = sa.count_commands(r, function() return unwrite(A) end)
    assert.equal(2, rep)
    assert.is_nil(counts.type)
    assert.equal(3, counts.hget)
    assert.equal(8, total)
    assert.equal(tk(11), r:call("GET", GRANT))
  end)

  it("queues writers behind readers too; readers never queue", function()
    assert.equal(NIL, read(A))
    assert.is_true(first_in_queue(write(B, nil, W + 11)))
    assert.equal(NIL, read(C))                             -- a reader joins a read-held lock
    assert.same({ tk(11) }, queue())
  end)

  it("the last write exit reserves the lock for the first writer, grants it on its wake channel, then 1", function()
    assert.equal(NIL, write(A))
    write(B, nil, W + 11)
    write(C, nil, W + 22)
    r:published()
    assert.equal(2, unwrite(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.equal(tk(11), r:call("GET", GRANT))
    sa.assert_pttl(r, GRANT, CLAIM, 1)
    assert.same({ tk(22) }, queue())
    assert.same({ { channel = wake(W + 11), message = grant_msg(W + 11) }, { channel = CHANNEL, message = "1" } },
      r:published())
    assert.equal(NIL, write(B, nil, -(W + 11)))            -- the claim
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.same({ mode = "write", [B .. ":write"] = "1" }, hash())
    assert.equal(2, unwrite(B))
    assert.equal(tk(22), r:call("GET", GRANT))
  end)

  it("the last reader's exit hands over to the first writer, then 0", function()
    assert.equal(NIL, read(A))
    assert.equal(NIL, read(B))
    write(C, nil, W + 11)
    r:published()
    assert.equal(0, unread(A))
    assert.same({}, r:published())
    assert.equal(2, unread(B))
    assert.equal(tk(11), r:call("GET", GRANT))
    assert.same({ { channel = wake(W + 11), message = grant_msg(W + 11) }, { channel = CHANNEL, message = "0" } },
      r:published())
    assert.equal(NIL, write(C, nil, -(W + 11)))
  end)

  it("a writer's exit that downgrades to its own reads grants nobody", function()
    assert.equal(NIL, write(A))
    assert.equal(NIL, read(A))
    write(B, nil, W + 11)
    r:published()
    assert.equal(1, unwrite(A))
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.same({ tk(11) }, queue())
    assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
    assert.equal(2, unread(A))                              -- then its last read does
    assert.equal(tk(11), r:call("GET", GRANT))
  end)

  it("a release with nobody queued publishes the bare message only", function()
    assert.equal(NIL, write(A))
    r:published()
    assert.equal(1, unwrite(A))
    assert.equal(NIL, read(A))
    assert.equal(1, unread(A))
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.same({ { channel = CHANNEL, message = "1" }, { channel = CHANNEL, message = "0" } }, r:published())
  end)

  it("readers and other writers respect the reservation; only its ticket takes the lock", function()
    assert.equal(NIL, write(A))
    write(B, nil, 11)
    unwrite(A)
    r:published()
    local before = sa.snapshot(r, { LOCK, GRANT })
    local rep = read(C)                                    -- a reader: waits out the claim window,
    assert.equal("table", type(rep))                       -- told apart from a holder's PTTL
    assert.equal(2, #rep)
    assert.is_true(type(rep[1]) == "number" and rep[1] > 0 and rep[1] <= CLAIM)
    assert.equal(0, rep[2])
    assert.is_true(write(D, nil, 0) > 0)                    -- a single try: the same
    assert.equal(-3, write(A, nil, 33))                    -- a new waiter: first behind it
    sa.assert_unchanged(r, before)
    assert.same({ "33" }, queue())
    assert.equal(NIL, write(B, nil, -11))
    assert.same({ mode = "write", [B .. ":write"] = "1" }, hash())
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.is_number(read(C))                               -- now the writer's PTTL: a bare integer
  end)

  it("a reservation without TTL (set by hand) gives a reader {-1, 0}: only a message ends its wait", function()
    r:call("SET", GRANT, "11")
    local before = sa.snapshot(r, { LOCK, GRANT })
    assert.same({ -1, 0 }, read(C))
    sa.assert_unchanged(r, before)
  end)

  it("grants a ticket below 2^25 (no wake channel) on the lock's channel, naming the next", function()
    assert.equal(NIL, write(A))
    write(B, nil, 11)
    write(C, nil, 22)
    r:published()
    assert.equal(2, unwrite(A))
    assert.same({ { channel = CHANNEL, message = string.format("%.0f", 11 * SHIFT + 22) },
                  { channel = CHANNEL, message = "1" } }, r:published())
  end)

  it("skips a writer whose wake channel nobody hears (its client is gone) and grants the next", function()
    r:ssubscribe(wake(W + 2048))            -- sharded: only ticket 2048's client still listens
    r:ssubscribe(CHANNEL)
    assert.equal(NIL, write(A))
    write(B, nil, W + 1024)
    write(C, nil, W + 2048)
    write(D, nil, W + 3072)
    r:published()
    assert.equal(2, unwrite(A, nil, "spublish"))
    assert.equal(tk(2048), r:call("GET", GRANT))
    assert.same({ tk(3072) }, queue())
    local got = {}
    for _, p in ipairs(r:published()) do
      if p.channel ~= wake(W + 1024) then got[#got + 1] = { channel = p.channel, message = p.message } end
    end
    assert.same({ { channel = wake(W + 2048), message = grant_msg(W + 2048) }, { channel = CHANNEL, message = "1" } },
      got)
  end)

  it("leaves the lock free and unreserved when every queued writer is gone", function()
    r:ssubscribe(CHANNEL)
    assert.equal(NIL, read(A))
    write(B, nil, W + 1024)
    r:published()
    assert.equal(1, unread(A, "spublish"))
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.equal(0, r:call("EXISTS", WAITERS))
    assert.equal(NIL, read(C))
  end)

  it_virtual("a reservation nobody claims runs out: then readers and writers may take the lock", function()
    assert.equal(NIL, write(A))
    write(B, nil, 11)                       -- B will die
    unwrite(A)
    assert.same(0, read(C)[2])               -- reserved: {grant PTTL, 0}
    r:advance(CLAIM + 1)
    assert.equal(NIL, read(C))
  end)

  it("a queued writer that takes a free, unreserved lock leaves the queue", function()
    write(A)
    write(B, nil, 11)
    write(C, nil, 22)
    r:call("DEL", LOCK)     -- the holder's lease ran out: no release, no reservation
    assert.equal(NIL, write(C, nil, -22))
    assert.same({ "11" }, queue())
  end)

  it("force release hands the lock to the first writer", function()
    assert.equal(NIL, read(A))
    write(B, nil, W + 11)
    r:published()
    assert.equal(1, force("any"))
    assert.equal(tk(11), r:call("GET", GRANT))
    assert.same({ { channel = wake(W + 11), message = grant_msg(W + 11) }, { channel = CHANNEL, message = "0" } },
      r:published())
  end)

  it("refuses the upgrade of a queued reader's write without touching the queue", function()
    assert.equal(NIL, read(A))
    write(B, nil, 11)
    local before = sa.snapshot(r, { LOCK, WAITERS, GRANT })
    sa.assert_error(write(A, nil, 33), "RLK_UPGRADE")
    sa.assert_unchanged(r, before)
  end)

  it("refuses companion keys of another type before any write", function()
    assert.equal(NIL, write(A))
    r:call("SET", WAITERS, "x")
    local before = sa.snapshot(r, all_keys())
    sa.assert_error(write(B, nil, 11), "RLK_WRONGTYPE")
    sa.assert_error(unwrite(A), "RLK_WRONGTYPE")
    sa.assert_error(force("any"), "RLK_WRONGTYPE")
    sa.assert_error(cancel(11), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
    r:call("DEL", WAITERS, LOCK)
    assert.equal(NIL, read(A))
    r:call("SET", WAITERS, "x")
    before = sa.snapshot(r, all_keys())
    sa.assert_error(unread(A), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
    r:call("DEL", WAITERS, LOCK, tkey(A, 1))
    r:call("HSET", GRANT, "f", "v")
    before = sa.snapshot(r, all_keys())
    sa.assert_error(write(B, nil, 11), "RLK_WRONGTYPE")
    sa.assert_error(read(B), "RLK_WRONGTYPE")
    sa.assert_unchanged(r, before)
  end)

  describe("rwlock/cancel", function()
    it("takes a writer out of the queue; the new first one is woken to learn it is first", function()
      write(A)
      write(B, nil, W + 11)
      write(C, nil, W + 22)
      write(D, nil, W + 33)
      r:published()
      assert.equal(1, cancel(W + 22))                  -- not first: nobody is told
      assert.same({}, r:published())
      assert.equal(1, cancel(W + 11))
      assert.same({ tk(33) }, queue())
      assert.same({ { channel = wake(W + 33), message = grant_msg(W + 33) } }, r:published())
      assert.equal(0, cancel(W + 11))
      assert.same({}, r:published())
    end)

    it("passes an unclaimed reservation on to the next writer at once, then 0", function()
      write(A)
      write(B, nil, W + 11)
      write(C, nil, W + 22)
      unwrite(A)
      r:published()
      assert.equal(2, cancel(W + 11))
      assert.equal(tk(22), r:call("GET", GRANT))
      assert.same({ { channel = wake(W + 22), message = grant_msg(W + 22) }, { channel = CHANNEL, message = "0" } },
        r:published())
      assert.equal(NIL, write(C, nil, -(W + 22)))
    end)

    it("drops the reservation and publishes 1 (readers may enter) when nobody else waits", function()
      write(A)
      write(B, nil, 11)
      unwrite(A)
      r:published()
      assert.equal(2, cancel(11))
      assert.equal(0, r:call("EXISTS", GRANT))
      assert.same({ { channel = CHANNEL, message = "1" } }, r:published())
      assert.equal(NIL, read(C))
    end)

    it("refuses bad tickets, claim windows and key counts without changing anything", function()
      write(A)
      write(B, nil, 11)
      for _, case in ipairs({ { { LOCK, CHANNEL, WAITERS, GRANT }, { "0", "50", "publish" } },
                              { { LOCK, CHANNEL, WAITERS, GRANT }, { "-11", "50", "publish" } },
                              { { LOCK, CHANNEL, WAITERS, GRANT }, { "11", "0", "publish" } },
                              { { LOCK, CHANNEL, WAITERS, GRANT }, { "11", "50" } },
                              { { LOCK, CHANNEL, WAITERS, GRANT }, { "11", "50", "publish", "0" } },
                              { { LOCK, CHANNEL, WAITERS }, { "11", "50", "publish" } } }) do
        local before = sa.snapshot(r, all_keys())
        sa.assert_error(r:script("rwlock/cancel", case[1], case[2]), "RLK_BADARG")
        sa.assert_unchanged(r, before)
      end
      local before = sa.snapshot(r, all_keys())
      sa.assert_error(cancel(11, "pub"), "RLK_BADPUBLISH")
      sa.assert_unchanged(r, before)
    end)

    it("refuses a lock key that is not a read-write lock", function()
      r:call("HSET", LOCK, A, "1")
      local before = sa.snapshot(r, all_keys())
      sa.assert_error(cancel(11), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end)
  end)
end)
