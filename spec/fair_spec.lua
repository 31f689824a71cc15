-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/fair/*.lua on the backend RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local helpers = require("support.helpers")
local sa = require("script_asserts")

local NIL = backend.NIL
-- Redisson's names for RFairLock "fair".
local LOCK, QUEUE, TIMEOUTS = "fair", "redisson_lock_queue:{fair}", "redisson_lock_timeout:{fair}"
local CHANNEL = "redisson_lock__channel:{fair}"
local A, B, C, D, E = "uuid-1:1", "uuid-1:2", "uuid-2:1", "uuid-3:1", "uuid-4:1"
local LEASE, WAIT = 30000, 5000
local BIG = 600000
local KEYS = { LOCK, QUEUE, TIMEOUTS }
local it_virtual = helpers.it_virtual

local r = backend.new()

local function s(v, default) return tostring(v or default) end
local function acquire(owner, lease, wait)
  return r:script("fair/acquire", KEYS, { s(lease, LEASE), owner, s(wait, WAIT) })
end
local function release(owner, lease, pub)
  return r:script("fair/release", { LOCK, QUEUE, TIMEOUTS, CHANNEL }, { owner, s(lease, LEASE), pub or "publish" })
end
local function renew(owner, lease) return r:script("fair/renew", KEYS, { s(lease, LEASE), owner }) end
local function cancel(owner, pub)
  return r:script("fair/cancel", { LOCK, QUEUE, TIMEOUTS, CHANNEL }, { owner, pub or "publish" })
end
local function force(pub)
  return r:script("fair/force_release", { LOCK, QUEUE, TIMEOUTS, CHANNEL }, { pub or "publish" })
end

local function queue() return r:call("LRANGE", QUEUE, "0", "-1") end
local function deadline(owner)
  local score = r:call("ZSCORE", TIMEOUTS, owner)
  return score ~= NIL and tonumber(score) or nil
end
local function count(owner) return r:call("HGET", LOCK, owner) end
local function wake(owner) return { channel = CHANNEL .. ":" .. owner, message = "0" } end

-- A bad call: the error code, and no key, TTL or message changed.
local function refused(code, call)
  local before = sa.snapshot(r, KEYS)
  sa.assert_error(call(), code)
  sa.assert_unchanged(r, before)
end

-- The lock held by A, with B and C queued behind it (all with WAIT). Returns the replies of B and C.
local function held_with_queue(lease)
  assert.equal(NIL, acquire(A, lease or LEASE))
  local rb, rc = acquire(B), acquire(C)
  assert.same({ B, C }, queue())
  return rb, rc
end

-- Wrong types for each of the three keys: RLK_WRONGTYPE and nothing changed.
local function wrongtype_cases(call)
  it("refuses a key of another type with RLK_WRONGTYPE", function()
    local fixtures = {
      [LOCK] = { { "SET", "%s", "x" }, sa.OTHER_TYPES.list, sa.OTHER_TYPES.zset },
      [QUEUE] = { { "SET", "%s", "x" }, { "HSET", "%s", "f", "1" }, sa.OTHER_TYPES.zset },
      [TIMEOUTS] = { { "SET", "%s", "x" }, { "HSET", "%s", "f", "1" }, sa.OTHER_TYPES.list, sa.OTHER_TYPES.set },
    }
    for _, key in ipairs(KEYS) do
      for _, make in ipairs(fixtures[key]) do
        r:reset()
        assert.equal(NIL, acquire(A, BIG))
        assert.is_number(acquire(B))
        r:call("DEL", key)
        sa.make(r, make, key)
        r:published()
        refused("RLK_WRONGTYPE", call)
      end
    end
  end)
end

-- Wrong numbers of keys/arguments: RLK_BADARG and nothing changed. cases: { name, keys, args }.
local function count_cases(cases)
  it("refuses the wrong number of keys or arguments", function()
    held_with_queue()
    r:published()
    for _, case in ipairs(cases) do
      refused("RLK_BADARG", function() return r:script(case[1], case[2], case[3]) end)
    end
  end)
end

local function owner_cases(call)
  it("refuses an empty owner or one longer than 1024 bytes", function()
    held_with_queue()
    r:published()
    for _, owner in ipairs({ "", string.rep("x", 1025) }) do
      refused("RLK_BADOWNER", function() return call(owner) end)
    end
  end)
end

local function lease_cases(code, call)
  it("refuses a duration that is not an integer in 1..10^12 with " .. code, function()
    held_with_queue()
    r:published()
    for _, v in ipairs(sa.BAD_LEASES) do
      refused(code, function() return call(v) end)
    end
  end)
end

before_each(function() r:reset() end)

describe("fair/acquire", function()
  it("takes a free lock without a queue: count 1, lease set, no queue keys", function()
    assert.equal(NIL, acquire(A))
    assert.same({ [1] = A, [2] = "1" }, r:call("HGETALL", LOCK))
    sa.assert_pttl(r, LOCK, LEASE, LEASE - sa.TTL_SLACK_MS)
    assert.equal(0, r:call("EXISTS", QUEUE, TIMEOUTS))
  end)

  it("re-enters for the holder: count + 1, TTL raised to a longer lease", function()
    assert.equal(NIL, acquire(A, 2000))
    assert.equal(NIL, acquire(A, BIG))
    assert.equal("2", count(A))
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
  end)

  it("queues the first waiter: reply = holder's PTTL, deadline = server now + wait", function()
    assert.equal(NIL, acquire(A, 20000))
    local t0 = r:time_ms()
    local ttl = acquire(B)
    local t1 = r:time_ms()
    assert.is_true(type(ttl) == "number" and ttl > 0 and ttl <= 20000, "reply " .. tostring(ttl))
    assert.same({ B }, queue())
    local now = deadline(B) - WAIT                     -- the server time the script used
    assert.is_true(now >= t0 and now <= t1, string.format("now %d outside [%d, %d]", now, t0, t1))
    assert.equal("1", count(A))
    assert.equal(NIL, count(B))
  end)

  it("queues later waiters at the tail, deadline now + their wait; each waits until the head's deadline", function()
    assert.equal(NIL, acquire(A, 20000))
    assert.is_number(acquire(B))
    local t0 = r:time_ms()
    local rc = acquire(C, nil, 7000)
    local t1 = r:time_ms()
    assert.same({ B, C }, queue())
    assert.is_true(deadline(C) >= t0 + 7000 and deadline(C) <= t1 + 7000, "deadline " .. deadline(C))
    assert.is_true(rc <= deadline(B) - t0 and rc >= deadline(B) - t1, "reply " .. rc)
  end)

  it("answers a waiter that retries without queueing it twice, moving its deadline on", function()
    held_with_queue(20000)
    local db, dc = deadline(B), deadline(C)
    local t0 = r:time_ms()
    local rb, rc = acquire(B), acquire(C)
    local t1 = r:time_ms()
    assert.is_true(rb > 0 and rb <= 20000, "head: the holder's PTTL, got " .. rb)
    assert.is_true(rc <= deadline(B) - t0 and rc >= deadline(B) - t1, "second: until the head's deadline, got " .. rc)
    assert.same({ B, C }, queue())
    assert.is_true(deadline(B) >= db and deadline(B) >= t0 + WAIT and deadline(B) <= t1 + WAIT)
    assert.is_true(deadline(C) >= dc and deadline(C) >= t0 + WAIT and deadline(C) <= t1 + WAIT)
  end)

  it("keeps FIFO: a free lock goes to the head only, who is dequeued; other deadlines stay", function()
    held_with_queue()
    assert.equal(1, release(A))
    assert.same({ wake(B) }, r:published())
    assert.is_number(acquire(C))                     -- not C's turn
    assert.is_number(acquire(D))                     -- a newcomer queues behind
    assert.same({ B, C, D }, queue())
    assert.equal(0, r:call("EXISTS", LOCK))
    local dc = deadline(C)
    assert.equal(NIL, acquire(B, nil, 3000))
    assert.equal("1", count(B))
    assert.same({ C, D }, queue())
    assert.is_nil(deadline(B))
    assert.equal(dc, deadline(C))
  end)

  it("replies -1 to the first waiter when the holder has no TTL", function()
    r:call("HSET", LOCK, A, "1")
    local t0 = r:time_ms()
    assert.equal(-1, acquire(B))
    local now = deadline(B) - WAIT
    assert.is_true(now >= t0 and now <= r:time_ms())
  end)

  it("leaves deadlines written by Redisson as they are; a waiter behind waits until that deadline", function()
    assert.equal(NIL, acquire(A, 20000))
    local far = r:time_ms() + BIG
    r:call("RPUSH", QUEUE, E)
    r:call("ZADD", TIMEOUTS, tostring(far), E)
    local t0 = r:time_ms()
    local rb = acquire(B)
    assert.same({ E, B }, queue())
    assert.equal(far, deadline(E))
    assert.is_true(deadline(B) >= t0 + WAIT and deadline(B) <= r:time_ms() + WAIT)
    assert.is_true(rb <= far - t0 and rb > far - t0 - sa.TTL_SLACK_MS)
  end)

  it("drops a head waiter without a deadline (inconsistent data) at once", function()
    assert.equal(NIL, acquire(A, 20000))
    r:call("RPUSH", QUEUE, E)
    assert.is_number(acquire(B))
    assert.same({ B }, queue())
  end)

  it("accepts the extreme leases, waits and an owner of 1024 bytes", function()
    local owner = string.rep("o", 1024)
    assert.equal(NIL, acquire(owner, "1000000000000", "1"))
    sa.assert_pttl(r, LOCK, 1e12, 1e12 - sa.TTL_SLACK_MS)
    local t0 = r:time_ms()
    assert.is_number(acquire(A, "1", "1000000000000"))
    assert.is_true(deadline(A) >= t0 + 1e12)
    assert.equal(1, release(owner))
    assert.equal(NIL, acquire(A, "1", "1"))
    assert.is_true(r:call("PTTL", LOCK) <= 1)
  end)

  it_virtual("hands the lock over in FIFO order, waking only the head each time", function()
    assert.equal(NIL, acquire(A))
    for _, o in ipairs({ B, C, D }) do assert.is_number(acquire(o)) end
    r:published()
    local order = {}
    local holder = A
    for _ = 1, 3 do
      assert.equal(1, release(holder))
      local woken = r:published()
      assert.equal(1, #woken)
      local next_owner = woken[1].channel:sub(#CHANNEL + 2)
      for _, o in ipairs(queue()) do
        if o ~= next_owner then assert.is_number(acquire(o)) end
      end
      assert.equal(NIL, acquire(next_owner))
      order[#order + 1] = next_owner
      holder = next_owner
      r:advance(100)
    end
    assert.same({ B, C, D }, order)
    assert.equal(0, r:call("EXISTS", QUEUE, TIMEOUTS))
  end)

  it_virtual("stores deadlines from the server's clock, moved on by every call of the waiter", function()
    local t = r:time_ms()
    assert.equal(NIL, acquire(A, 10000))
    assert.equal(10000, acquire(B))
    assert.equal(t + WAIT, deadline(B))
    r:advance(1000)
    assert.equal(WAIT - 1000, acquire(C))            -- until the head's deadline
    assert.equal(t + 1000 + WAIT, deadline(C))
    assert.equal(9000, acquire(B))
    assert.equal(t + 1000 + WAIT, deadline(B))
    assert.equal(WAIT, acquire(C))
  end)

  it_virtual("drops a dead waiter wait_ms after its last call, wherever it stands in the queue", function()
    local t = r:time_ms()
    assert.equal(NIL, acquire(A, BIG))
    for _, o in ipairs({ B, C, D }) do assert.is_number(acquire(o)) end -- B and then C die
    r:advance(2000)
    assert.is_number(acquire(C))
    assert.is_number(acquire(D))
    r:advance(WAIT - 2001)
    assert.is_number(acquire(D))
    assert.same({ B, C, D }, queue())
    r:advance(1)                                     -- t + WAIT: B's deadline
    assert.is_number(acquire(D))
    assert.same({ C, D }, queue())
    assert.is_nil(deadline(B))
    r:advance(1999)                                  -- t + 2000 + WAIT - 1: C still in, D moved on
    assert.is_number(acquire(D))
    assert.same({ C, D }, queue())
    r:advance(1)                                     -- C's deadline, in the middle of nothing
    assert.equal(BIG - (t + 2000 + WAIT - t), acquire(D)) -- D is the head: the holder's PTTL
    assert.same({ D }, queue())
    r:advance(BIG)                                   -- the holder's lease runs out
    assert.equal(NIL, acquire(D))
    assert.equal(0, r:call("EXISTS", QUEUE, TIMEOUTS))
  end)

  it_virtual("drops a dead waiter in the middle while those around it keep their places", function()
    assert.equal(NIL, acquire(A, BIG))
    assert.is_number(acquire(B))
    assert.is_number(acquire(C))                     -- C dies
    assert.is_number(acquire(D))
    r:advance(WAIT / 2)
    assert.is_number(acquire(B))
    assert.is_number(acquire(D))
    r:advance(WAIT / 2)                              -- C's deadline
    assert.is_number(acquire(B))
    assert.same({ B, D }, queue())
    r:advance(WAIT)                                  -- a live waiter late by a whole wait: re-queued
    assert.is_number(acquire(B))
    assert.same({ B }, queue())
    assert.is_number(acquire(D))
    assert.same({ B, D }, queue())
  end)

  it_virtual("keeps a live head in place however long the holder keeps the lock", function()
    assert.equal(NIL, acquire(A, 10000))
    assert.is_number(acquire(B))
    assert.is_number(acquire(C))
    for _ = 1, 20 do                                 -- 100 s: far past the lease + the wait
      r:advance(WAIT / 2)
      assert.equal(1, renew(A, 10000))
      assert.is_number(acquire(B))
      assert.is_number(acquire(C))
    end
    assert.same({ B, C }, queue())
    assert.equal(1, release(A))
    assert.equal(NIL, acquire(B))
  end)

  it_virtual("tells a head whose estimate passed to wait for the holder instead of spinning", function()
    assert.equal(NIL, acquire(A, 10000))
    assert.is_number(acquire(B, nil, 20000))
    assert.is_number(acquire(C, nil, 20000))
    r:advance(9000)
    assert.equal(1, renew(A, 10000))                 -- the holder keeps it longer than B expected
    r:advance(3000)
    assert.equal(7000, acquire(B, nil, 20000))       -- head: the holder's PTTL (Redisson 3.17: -2000)
    assert.equal(20000, acquire(C, nil, 20000))      -- behind: until the head's (moved) deadline
  end)

  it_virtual("tells a waiter behind the head to retry at the head's deadline, never at once", function()
    assert.equal(NIL, acquire(A, 10000))
    assert.is_number(acquire(B, nil, 1000))          -- deadline +1000
    assert.is_number(acquire(C))
    r:advance(999)
    assert.equal(1, acquire(C, nil, 9000))
    r:advance(1)
    assert.equal(9000, acquire(C, nil, 9000))        -- B dropped: C is the head, the holder's PTTL
  end)

  it_virtual("re-queues a waiter dropped after its deadline at the tail", function()
    assert.equal(NIL, acquire(A, 10000))
    assert.is_number(acquire(C, nil, 1000))          -- deadline +11000
    r:advance(9000)
    assert.equal(1, renew(A, 10000))
    r:advance(2000)                                  -- C's deadline passes while A holds
    assert.equal(8000, acquire(D))                   -- C is dropped, D becomes the head
    assert.same({ D }, queue())
    assert.is_number(acquire(C))
    assert.same({ D, C }, queue())
  end)

  wrongtype_cases(function() return acquire(C) end)
  owner_cases(function(owner) return acquire(owner) end)
  lease_cases("RLK_BADLEASE", function(v) return acquire(D, v) end)
  lease_cases("RLK_BADARG", function(v) return acquire(D, nil, v) end)
  count_cases({
    { "fair/acquire", { LOCK, QUEUE }, { "1000", D, "5000" } },
    { "fair/acquire", { LOCK, QUEUE, TIMEOUTS, CHANNEL }, { "1000", D, "5000" } },
    { "fair/acquire", KEYS, { "1000", D } },
    { "fair/acquire", KEYS, { "1000", D, "5000", "x" } },
  })
end)

describe("fair/release", function()
  -- What the usual calls cost the server, command by command (sa.count_commands): each key is
  -- read once, whether the call ends on the usual path or goes on (held, queued, a handoff).
  it("the usual calls read each key once: acquire 7 commands, release 5, a handoff's release 7", function()
    local rep, _, total = sa.count_commands(r, function() return acquire(A) end)
    assert.equal(NIL, rep)
    assert.equal(7, total)
    local counts
    rep, counts = sa.count_commands(r, function() return acquire(B) end)   -- held: queued
    assert.is_number(rep)
    assert.equal(1, counts.time)
    assert.equal(1, counts.pttl)
    assert.equal(1, counts.lindex)
    rep, counts, total = sa.count_commands(r, function() return release(A) end)   -- hands over
    assert.equal(1, rep)
    assert.equal(1, counts.time)
    assert.equal(1, counts.lindex)
    assert.equal(7, total)
    assert.same({ wake(B) }, r:published())
    assert.equal(NIL, acquire(B))
    rep, _, total = sa.count_commands(r, function() return release(B) end)
    assert.equal(1, rep)
    assert.equal(5, total)
  end)

  it("releases the last hold and wakes the head waiter on its own channel", function()
    held_with_queue()
    r:published()
    assert.equal(1, release(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({ wake(B) }, r:published())
    assert.same({ B, C }, queue())
  end)

  it("publishes nothing when nobody waits", function()
    assert.equal(NIL, acquire(A))
    assert.equal(1, release(A))
    assert.same({}, r:published())
  end)

  it("leaves one re-entry: count - 1, TTL raised to a longer lease, nothing published", function()
    assert.equal(NIL, acquire(A, 2000))
    assert.equal(NIL, acquire(A, 2000))
    assert.is_number(acquire(B))
    r:published()
    assert.equal(0, release(A, BIG))
    assert.equal("1", count(A))
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
    assert.same({}, r:published())
  end)

  it("replies nil to a waiter and to anyone without a lock, changing nothing", function()
    held_with_queue()
    r:published()
    local before = sa.snapshot(r, KEYS)
    assert.equal(NIL, release(B))
    sa.assert_unchanged(r, before)
    r:reset()
    assert.equal(NIL, release(A))
    assert.equal(0, r:call("EXISTS", LOCK, QUEUE, TIMEOUTS))
    assert.same({}, r:published())
  end)

  it("checks the lease even when the call would release the lock", function()
    held_with_queue()
    r:published()
    refused("RLK_BADLEASE", function() return release(A, "0") end)
  end)

  it_virtual("drops stale waiters first and wakes the first live one", function()
    assert.equal(NIL, acquire(A, 10000))
    assert.is_number(acquire(B, nil, 1000))          -- deadline +1000
    assert.is_number(acquire(C, nil, 20000))         -- deadline +20000
    r:advance(9000)
    assert.equal(1, renew(A, 10000))
    r:advance(2500)                                  -- B's deadline passed, C's not
    r:published()
    assert.equal(1, release(A))
    assert.same({ C }, queue())
    assert.same({ wake(C) }, r:published())
  end)

  it_virtual("replies nil once the lease ran out, waking nobody", function()
    held_with_queue(1000)
    r:advance(1001)
    r:published()
    assert.equal(NIL, release(A))
    assert.same({}, r:published())
    assert.same({ B, C }, queue())
  end)

  wrongtype_cases(function() return release(A) end)
  owner_cases(function(owner) return release(owner) end)
  lease_cases("RLK_BADLEASE", function(v) return release(A, v) end)
  count_cases({
    { "fair/release", KEYS, { A, "1000", "publish" } },
    { "fair/release", { LOCK, QUEUE, TIMEOUTS, CHANNEL, "x" }, { A, "1000", "publish" } },
    { "fair/release", { LOCK, QUEUE, TIMEOUTS, CHANNEL }, { A, "1000" } },
    { "fair/release", { LOCK, QUEUE, TIMEOUTS, CHANNEL }, { A, "1000", "publish", "x" } },
  })
  sa.publish_cases(r, { LOCK, QUEUE, TIMEOUTS }, held_with_queue, function(pub) return release(A, nil, pub) end,
    CHANNEL .. ":" .. B)
end)

describe("fair/renew", function()
  it("resets the lease of the holder and replies 1", function()
    assert.equal(NIL, acquire(A, 2000))
    assert.equal(1, renew(A, BIG))
    sa.assert_pttl(r, LOCK, BIG, BIG - sa.TTL_SLACK_MS)
  end)

  it("replies 0 to a waiter or without a lock, changing nothing", function()
    held_with_queue()
    local before = sa.snapshot(r, KEYS)
    assert.equal(0, renew(B, BIG))
    sa.assert_unchanged(r, before)
    r:reset()
    assert.equal(0, renew(A))
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  it_virtual("drops stale waiters", function()
    assert.equal(NIL, acquire(A, 10000))
    assert.is_number(acquire(B, nil, 1000))
    assert.is_number(acquire(C, nil, BIG))
    r:advance(9000)
    assert.equal(1, renew(A, 10000))
    r:advance(2000)
    assert.equal(1, renew(A, 10000))
    assert.same({ C }, queue())
    assert.is_nil(deadline(B))
  end)

  wrongtype_cases(function() return renew(A) end)
  owner_cases(function(owner) return renew(owner) end)
  lease_cases("RLK_BADLEASE", function(v) return renew(A, v) end)
  count_cases({
    { "fair/renew", { LOCK, QUEUE }, { "1000", A } },
    { "fair/renew", { LOCK, QUEUE, TIMEOUTS, CHANNEL }, { "1000", A } },
    { "fair/renew", KEYS, { "1000" } },
    { "fair/renew", KEYS, { "1000", A, "x" } },
  })
end)

describe("fair/cancel", function()
  it("removes a waiter; the others' deadlines stay", function()
    held_with_queue()
    assert.is_number(acquire(D))
    local db, dd = deadline(B), deadline(D)
    assert.equal(1, cancel(C))
    assert.same({ B, D }, queue())
    assert.is_nil(deadline(C))
    assert.equal(db, deadline(B))
    assert.equal(dd, deadline(D))
    assert.same({}, r:published())
  end)

  it("removes the last waiter without touching the others", function()
    held_with_queue()
    local db = deadline(B)
    assert.equal(1, cancel(C))
    assert.same({ B }, queue())
    assert.equal(db, deadline(B))
  end)

  it("wakes the next waiter when the head gives up while the lock is free", function()
    held_with_queue()
    assert.equal(1, release(A))
    r:published()
    assert.equal(1, cancel(B))
    assert.same({ wake(C) }, r:published())
    assert.equal(NIL, acquire(C))
  end)

  it("wakes nobody when a waiter behind the head gives up, even with the lock free", function()
    held_with_queue()
    assert.equal(1, release(A))
    r:published()
    assert.equal(1, cancel(C))
    assert.same({}, r:published())
    assert.same({ B }, queue())
  end)

  it("wakes nobody when the head gives up while the lock is held", function()
    held_with_queue()
    r:published()
    assert.equal(1, cancel(B))
    assert.same({}, r:published())
    assert.same({ C }, queue())
  end)

  it("replies 0 to an owner that is not queued, changing nothing", function()
    held_with_queue()
    r:published()
    local before = sa.snapshot(r, KEYS)
    assert.equal(0, cancel(A))
    assert.equal(0, cancel(D))
    sa.assert_unchanged(r, before)
  end)

  it_virtual("wakes the new head when it drops a dead head of a free lock", function()
    assert.equal(NIL, acquire(A, 10000))
    assert.is_number(acquire(B, nil, 1000))          -- B dies
    assert.is_number(acquire(C, nil, BIG))
    assert.is_number(acquire(D, nil, BIG))
    assert.equal(1, release(A))
    assert.same({ wake(B) }, r:published())
    r:advance(1000)
    assert.equal(1, cancel(D))
    assert.same({ wake(C) }, r:published())
    assert.same({ C }, queue())
  end)

  it_virtual("drops stale waiters before cancelling, leaving the others' deadlines", function()
    assert.equal(NIL, acquire(A, 10000))
    assert.is_number(acquire(B, nil, 1000))
    assert.is_number(acquire(C, nil, BIG))
    local dc = deadline(C)
    r:advance(9000)
    assert.equal(1, renew(A, 10000))
    r:advance(2000)                                  -- B is stale
    assert.equal(0, cancel(B))
    assert.same({ C }, queue())
    assert.equal(dc, deadline(C))
  end)

  wrongtype_cases(function() return cancel(B) end)
  owner_cases(function(owner) return cancel(owner) end)
  count_cases({
    { "fair/cancel", KEYS, { B, "publish" } },
    { "fair/cancel", { LOCK, QUEUE, TIMEOUTS, CHANNEL, "x" }, { B, "publish" } },
    { "fair/cancel", { LOCK, QUEUE, TIMEOUTS, CHANNEL }, { B } },
    { "fair/cancel", { LOCK, QUEUE, TIMEOUTS, CHANNEL }, { B, "publish", "1000" } },
  })
  sa.publish_cases(r, { LOCK, QUEUE, TIMEOUTS }, function()
    held_with_queue()
    assert.equal(1, release(A))
  end, function(pub) return cancel(B, pub) end, CHANNEL .. ":" .. C)
end)

describe("fair/force_release", function()
  -- The holders' message: on the lock channel itself, where rlk's watchdog listens.
  local told = { channel = CHANNEL, message = "0" }

  it("deletes the lock whoever holds it, wakes the head waiter and tells the holders", function()
    held_with_queue()
    assert.equal(NIL, acquire(A))
    r:published()
    assert.equal(1, force())
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({ B, C }, queue())
    assert.same({ wake(B), told }, r:published())
    assert.equal(NIL, acquire(B))
  end)

  it("deletes a lock nobody waits for, telling only the holders", function()
    assert.equal(NIL, acquire(A))
    assert.equal(1, force())
    assert.same({ told }, r:published())
  end)

  it("replies 0 when there is no lock and publishes nothing", function()
    assert.equal(0, force())
    assert.same({}, r:published())
  end)

  it_virtual("drops stale head waiters before waking the first live one", function()
    assert.equal(NIL, acquire(A, 10000))
    assert.is_number(acquire(B, nil, 1000))
    assert.is_number(acquire(C, nil, BIG))
    r:advance(9000)
    assert.equal(1, renew(A, 10000))
    r:advance(2000)
    r:published()
    assert.equal(1, force())
    assert.same({ wake(C), told }, r:published())
  end)

  wrongtype_cases(function() return force() end)
  count_cases({
    { "fair/force_release", KEYS, { "publish" } },
    { "fair/force_release", { LOCK, QUEUE, TIMEOUTS, CHANNEL, "x" }, { "publish" } },
    { "fair/force_release", { LOCK, QUEUE, TIMEOUTS, CHANNEL }, {} },
    { "fair/force_release", { LOCK, QUEUE, TIMEOUTS, CHANNEL }, { "publish", "0" } },
  })
  sa.publish_cases(r, { LOCK, QUEUE, TIMEOUTS }, held_with_queue, force, { CHANNEL .. ":" .. B, CHANNEL })
end)

describe("fair/clear_queue", function()
  local QKEYS = { LOCK, QUEUE, TIMEOUTS, CHANNEL }
  local function clear(pub) return r:script("fair/clear_queue", QKEYS, { pub or "publish" }) end

  it("empties the queue and its deadlines, waking each waiter on its own channel in queue order", function()
    held_with_queue(BIG)
    r:published()
    assert.equal(2, clear())
    assert.equal(0, r:call("EXISTS", QUEUE))
    assert.equal(0, r:call("EXISTS", TIMEOUTS))
    assert.same({ wake(B), wake(C) }, r:published())
    -- The lock is not touched; a woken waiter queues again.
    assert.equal("1", count(A))
    assert.is_number(acquire(B))
    assert.same({ B }, queue())
  end)

  it("wakes the waiters of a free lock and a dead one alike (its deadline passed or not)", function()
    held_with_queue(BIG)
    assert.equal(1, release(A))
    r:published()
    assert.equal(2, clear())
    assert.same({ wake(B), wake(C) }, r:published())
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  it("replies 0 and publishes nothing when nobody waits", function()
    assert.equal(NIL, acquire(A))
    r:published()
    assert.equal(0, clear())
    assert.same({}, r:published())
    assert.equal("1", count(A))
  end)

  it("deletes deadlines left without a queue", function()
    r:call("ZADD", TIMEOUTS, "1", D)
    assert.equal(0, clear())
    assert.equal(0, r:call("EXISTS", TIMEOUTS))
    assert.same({}, r:published())
  end)

  wrongtype_cases(function() return clear() end)
  count_cases({
    { "fair/clear_queue", KEYS, { "publish" } },
    { "fair/clear_queue", { LOCK, QUEUE, TIMEOUTS, CHANNEL, "x" }, { "publish" } },
    { "fair/clear_queue", QKEYS, {} },
    { "fair/clear_queue", QKEYS, { "publish", "x" } },
  })
  sa.publish_cases(r, { LOCK, QUEUE, TIMEOUTS }, held_with_queue, clear,
    { CHANNEL .. ":" .. B, CHANNEL .. ":" .. C })
end)
