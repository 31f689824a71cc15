-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of "a re-entry never shortens a hold" on the backend RLK_BACKEND picks (mock or a real
-- redis-server): one holder id may be shared by several processes (a nested `rlk lock` takes
-- RLK_LOCK_OWNER, an application hands a child its id), so a re-entry, a release that leaves a
-- hold and a renewal by one of them must not cut the TTL another one counts on. Every re-entrant
-- kind (reentrant, fair, read-write, faster MultiLock) keeps max(current TTL, lease); a hold
-- without a TTL keeps none (PEXPIRE ... GT). None of these needs the virtual clock.
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local sa = require("script_asserts")

local NIL = backend.NIL
local A, B = "4e1a-uuid-a:1", "4e1a-uuid-b:2"
local LONG, SHORT = 600000, 1000
-- Above what a shortened TTL could be, below what the long one is after a slow step.
local FLOOR = LONG - sa.TTL_SLACK_MS

local r = backend.new()

before_each(function() r:reset() end)

-- ---------------------------------------------------------------- reentrant

local LOCK, CHANNEL = "{nl}", "redisson_lock__channel:{nl}"
local WAITERS, GRANT, DELAY = "{nl}:rlk_waiters", "{nl}:rlk_next", "{nl}:rlk_delay"

local function acquire(owner, lease, delay)
  if delay then
    return r:script("reentrant/acquire", { LOCK, WAITERS, GRANT, DELAY },
      { tostring(lease), owner, "0", tostring(delay) })
  end
  return r:script("reentrant/acquire", { LOCK, WAITERS, GRANT }, { tostring(lease), owner, "0" })
end
local function release(owner, lease, with_delay)
  local keys = { LOCK, CHANNEL, WAITERS, GRANT }
  if with_delay then keys[5] = DELAY end
  return r:script("reentrant/release", keys, { owner, tostring(lease), "5000", "publish" })
end
local function renew(owner, lease, with_delay)
  return r:script("reentrant/renew", with_delay and { LOCK, DELAY } or { LOCK }, { tostring(lease), owner })
end

describe("reentrant: a re-entry never shortens a hold", function()
  it("re-entry with a shorter lease keeps the longer PTTL", function()
    assert.equal(NIL, acquire(A, LONG))
    assert.equal(NIL, acquire(A, SHORT))
    assert.equal("2", r:call("HGET", LOCK, A))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("re-entry with a longer lease raises the PTTL", function()
    assert.equal(NIL, acquire(A, SHORT))
    assert.equal(NIL, acquire(A, LONG))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("a release that leaves a hold keeps the longer PTTL", function()
    assert.equal(NIL, acquire(A, LONG))
    assert.equal(NIL, acquire(A, SHORT))
    assert.equal(0, release(A, SHORT))
    assert.equal("1", r:call("HGET", LOCK, A))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("a renewal with a shorter lease keeps the longer PTTL", function()
    assert.equal(NIL, acquire(A, LONG))
    assert.equal(1, renew(A, SHORT))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("renew with first sets a single hold's shorter lease (a MultiLock's member)", function()
    assert.equal(NIL, acquire(A, LONG))
    assert.equal(1, r:script("reentrant/renew", { LOCK }, { tostring(SHORT), A, "first" }))
    sa.assert_pttl(r, LOCK, SHORT, SHORT - sa.TTL_SLACK_MS)
  end)

  it("renew with first keeps the longer PTTL of a re-entered hold", function()
    assert.equal(NIL, acquire(A, LONG))
    assert.equal(NIL, acquire(A, LONG))
    assert.equal(1, r:script("reentrant/renew", { LOCK }, { tostring(SHORT), A, "first" }))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("renew refuses a third argument other than first, nothing changed", function()
    assert.equal(NIL, acquire(A, LONG))
    sa.assert_error(r:script("reentrant/renew", { LOCK }, { tostring(SHORT), A, "set" }),
      "RLK_BADARG")
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("renew_many with a shorter lease keeps the longer PTTL (and raises a shorter one)", function()
    assert.equal(NIL, acquire(A, LONG))
    r:call("HSET", "{nl}b", A, "1")
    r:call("PEXPIRE", "{nl}b", "500")
    assert.same({ 1, 1 }, r:script("reentrant/renew_many", { LOCK, "{nl}b" }, { "30000", A }))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
    sa.assert_pttl(r, "{nl}b", 30000, 30000 - sa.TTL_SLACK_MS)
  end)

  it("a hold without a TTL keeps none: re-entry, release and renewal set none", function()
    r:call("HSET", LOCK, A, "1")
    assert.equal(NIL, acquire(A, SHORT))
    assert.equal(-1, r:call("PTTL", LOCK))
    assert.equal(0, release(A, SHORT))
    assert.equal(-1, r:call("PTTL", LOCK))
    assert.equal(1, renew(A, SHORT))
    assert.equal(-1, r:call("PTTL", LOCK))
    assert.equal("1", r:call("HGET", LOCK, A))
  end)

  it("with a lock-delay: re-entry, release and renewal keep the delay key's longer PTTL", function()
    assert.equal(NIL, acquire(A, LONG, 5000))
    assert.equal(NIL, acquire(A, SHORT, 5000))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
    sa.assert_pttl(r, DELAY, LONG + 5000, FLOOR + 5000)
    assert.equal(0, release(A, SHORT, true))
    sa.assert_pttl(r, DELAY, LONG + 5000, FLOOR + 5000)
    assert.equal(1, renew(A, SHORT, true))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
    sa.assert_pttl(r, DELAY, LONG + 5000, FLOOR + 5000)
    assert.equal("5000", r:call("GET", DELAY))
  end)

  it("a re-entry with a lock-delay writes the delay key when the hold had none", function()
    assert.equal(NIL, acquire(A, LONG))
    assert.equal(NIL, acquire(A, SHORT, 5000))
    assert.equal("5000", r:call("GET", DELAY))
    sa.assert_pttl(r, DELAY, LONG + 5000, FLOOR + 5000)
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("nonreentrant/release that leaves a hold (a reentrant re-entry of one id) keeps the longer PTTL", function()
    assert.equal(NIL, r:script("nonreentrant/acquire", { LOCK }, { tostring(LONG), A }))
    assert.equal(NIL, acquire(A, SHORT))
    assert.equal(0, r:script("nonreentrant/release", { LOCK, CHANNEL }, { A, tostring(SHORT), "publish" }))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("another owner's refusal still changes nothing", function()
    assert.equal(NIL, acquire(A, LONG))
    local before = sa.snapshot(r, { LOCK })
    assert.is_number(acquire(B, SHORT))
    sa.assert_unchanged(r, before)
  end)
end)

-- ---------------------------------------------------------------- fair

local FLOCK, QUEUE, TIMEOUTS = "nfair", "redisson_lock_queue:{nfair}", "redisson_lock_timeout:{nfair}"
local FCHANNEL = "redisson_lock__channel:{nfair}"
local FKEYS = { FLOCK, QUEUE, TIMEOUTS }

local function facquire(owner, lease)
  return r:script("fair/acquire", FKEYS, { tostring(lease), owner, "5000" })
end
local function frelease(owner, lease)
  return r:script("fair/release", { FLOCK, QUEUE, TIMEOUTS, FCHANNEL }, { owner, tostring(lease), "publish" })
end
local function frenew(owner, lease)
  return r:script("fair/renew", FKEYS, { tostring(lease), owner })
end

describe("fair: a re-entry never shortens a hold", function()
  it("re-entry with a shorter lease keeps the longer PTTL", function()
    assert.equal(NIL, facquire(A, LONG))
    assert.equal(NIL, facquire(A, SHORT))
    assert.equal("2", r:call("HGET", FLOCK, A))
    sa.assert_pttl(r, FLOCK, LONG, FLOOR)
  end)

  it("a release that leaves a hold keeps the longer PTTL", function()
    assert.equal(NIL, facquire(A, LONG))
    assert.equal(NIL, facquire(A, SHORT))
    assert.equal(0, frelease(A, SHORT))
    sa.assert_pttl(r, FLOCK, LONG, FLOOR)
  end)

  it("a renewal with a shorter lease keeps the longer PTTL; a longer one raises it", function()
    assert.equal(NIL, facquire(A, SHORT))
    assert.equal(1, frenew(A, LONG))
    sa.assert_pttl(r, FLOCK, LONG, FLOOR)
    assert.equal(1, frenew(A, SHORT))
    sa.assert_pttl(r, FLOCK, LONG, FLOOR)
  end)

  it("a hold without a TTL keeps none", function()
    r:call("HSET", FLOCK, A, "1")
    assert.equal(NIL, facquire(A, SHORT))
    assert.equal(0, frelease(A, SHORT))
    assert.equal(1, frenew(A, SHORT))
    assert.equal(-1, r:call("PTTL", FLOCK))
  end)
end)

-- ---------------------------------------------------------------- read-write

local RW, PREFIX, RWCHANNEL = "nrw", "{nrw}", "redisson_rwlock:{nrw}"
local RWWAITERS, RWGRANT = "{nrw}:rlk_waiters", "{nrw}:rlk_next"

local function tkey(owner, n) return PREFIX .. ":" .. owner .. ":rwlock_timeout:" .. n end
local function read(owner, lease)
  return r:script("rwlock/read_acquire", { RW, PREFIX, RWGRANT }, { tostring(lease), owner })
end
local function write(owner, lease)
  return r:script("rwlock/write_acquire", { RW, RWWAITERS, RWGRANT }, { tostring(lease), owner, "0" })
end
local function unread(owner)
  return r:script("rwlock/read_release", { RW, RWCHANNEL, PREFIX, RWWAITERS, RWGRANT },
    { owner, "5000", "publish" })
end
local function unwrite(owner, lease)
  return r:script("rwlock/write_release", { RW, RWCHANNEL, PREFIX, RWWAITERS, RWGRANT },
    { owner, tostring(lease), "5000", "publish" })
end

describe("read-write: a re-entry never shortens a hold", function()
  it("write re-entry and a write release that leaves a hold keep the longer PTTL", function()
    assert.equal(NIL, write(A, LONG))
    assert.equal(NIL, write(A, SHORT))
    sa.assert_pttl(r, RW, LONG, FLOOR)
    assert.equal(0, unwrite(A, SHORT))
    sa.assert_pttl(r, RW, LONG, FLOOR)
  end)

  it("a write renewal with a shorter lease keeps the longer PTTL", function()
    assert.equal(NIL, write(A, LONG))
    assert.equal(1, r:script("rwlock/renew_writer", { RW }, { tostring(SHORT), A }))
    sa.assert_pttl(r, RW, LONG, FLOOR)
  end)

  it("read re-entry with a shorter lease keeps the longer PTTL", function()
    assert.equal(NIL, read(A, LONG))
    assert.equal(NIL, read(A, SHORT))
    sa.assert_pttl(r, RW, LONG, FLOOR)
    sa.assert_pttl(r, tkey(A, 1), LONG, FLOOR)
  end)

  it("the outer read left first: the reads left keep the longer lease, on their key and the hash", function()
    assert.equal(NIL, read(A, SHORT))        -- the outer: timeout key 1
    assert.equal(NIL, read(A, LONG))         -- the inner, sharing the id: timeout key 2
    assert.equal(0, unread(A))               -- the outer leaves: key 2 goes (the highest)
    assert.equal("1", r:call("HGET", RW, A))
    sa.assert_pttl(r, tkey(A, 1), LONG, FLOOR)
    sa.assert_pttl(r, RW, LONG, FLOOR)
  end)

  it("a renewal of the reads with a shorter lease keeps the longer leases and says renewed", function()
    assert.equal(NIL, read(A, LONG))
    assert.equal(NIL, read(A, SHORT))
    assert.same({ 1 }, r:script("rwlock/renew_readers", { RW, PREFIX }, { "30000", A }))
    sa.assert_pttl(r, tkey(A, 1), LONG, FLOOR)
    sa.assert_pttl(r, tkey(A, 2), 30000, 30000 - sa.TTL_SLACK_MS)
    sa.assert_pttl(r, RW, LONG, FLOOR)
  end)

  it("a write lock without a TTL keeps none (re-entry, release, renewal)", function()
    r:call("HSET", RW, "mode", "write", A .. ":write", "1")
    assert.equal(NIL, write(A, SHORT))
    assert.equal(0, unwrite(A, SHORT))
    assert.equal(1, r:script("rwlock/renew_writer", { RW }, { tostring(SHORT), A }))
    assert.equal(-1, r:call("PTTL", RW))
  end)

  it("a read of a lock that had none still sets the hash's TTL", function()
    assert.equal(NIL, read(A, SHORT))
    sa.assert_pttl(r, RW, SHORT)
    assert.equal(NIL, read(B, LONG))
    sa.assert_pttl(r, RW, LONG, FLOOR)
  end)
end)

-- ---------------------------------------------------------------- faster MultiLock

local GROUP, GCHANNEL = "ngroup", "redisson_lock__channel:{ngroup}"

local function fm(script, keys, first, values)
  local a = {}
  for _, x in ipairs(first) do a[#a + 1] = x end
  for _, v in ipairs(values) do a[#a + 1] = v end
  return r:script(script, keys, a)
end

describe("faster MultiLock: a re-entry never shortens a hold", function()
  it("re-entry, a release that leaves a hold and a renewal keep the longer PTTL", function()
    assert.equal(NIL, fm("fastmulti/acquire", { GROUP }, { tostring(LONG), A }, { "x" }))
    assert.equal(NIL, fm("fastmulti/acquire", { GROUP }, { tostring(SHORT), A }, { "x" }))
    sa.assert_pttl(r, GROUP, LONG, FLOOR)
    assert.equal(0, fm("fastmulti/release", { GROUP, GCHANNEL }, { A, tostring(SHORT), "publish" }, { "x" }))
    sa.assert_pttl(r, GROUP, LONG, FLOOR)
    assert.equal(1, r:script("fastmulti/renew", { GROUP }, { tostring(SHORT), A }))
    sa.assert_pttl(r, GROUP, LONG, FLOOR)
    local exp = tonumber(r:call("HGET", GROUP, "x:" .. A .. ":expire_time"))
    assert.is_true(exp >= r:time_ms() + FLOOR, "expire_time " .. tostring(exp))
  end)

  it("a group without a TTL keeps none (release that leaves a hold, renewal)", function()
    assert.equal(NIL, fm("fastmulti/acquire", { GROUP }, { tostring(LONG), A }, { "x" }))
    assert.equal(NIL, fm("fastmulti/acquire", { GROUP }, { tostring(LONG), A }, { "x" }))
    r:call("PERSIST", GROUP)
    assert.equal(0, fm("fastmulti/release", { GROUP, GCHANNEL }, { A, tostring(SHORT), "publish" }, { "x" }))
    assert.equal(-1, r:call("PTTL", GROUP))
    assert.equal(1, r:script("fastmulti/renew", { GROUP }, { tostring(SHORT), A }))
    assert.equal(-1, r:call("PTTL", GROUP))
  end)
end)
