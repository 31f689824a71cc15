-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of the reentrant lock's held grants (docs/runtime.md, "Held grants"): a waiter that says
-- so (reentrant/acquire with ARGV[4] held and KEYS[4] {lock}:rlk_who) records its ticket's owner
-- and lease; a release that says so (ARGV[5] held) writes the lock in that waiter's name when its
-- grant reached a subscriber; cancel and acquire of that ticket recognise the grant. Callers that
-- do not say so (today's argument lists) get today's replies and keys.
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local sa = require("script_asserts")
local helpers = require("support.helpers")

local NIL = backend.NIL
local LOCK, CHANNEL = "{res}", "redisson_lock__channel:{res}"
local WAITERS, GRANT, WHO = "{res}:rlk_waiters", "{res}:rlk_next", "{res}:rlk_who"
local CLAIM = 5000
local A, B, C = "1b9e7c2a-uuid-a:1", "1b9e7c2a-uuid-b:7", "1b9e7c2a-uuid-c:3"
local LEASE = 30000
local W, SHIFT = 33554432, 67108864    -- 2^25: tickets with a wake channel; 2^26: the grant's shift

local r = backend.new()

local function tk(n) return string.format("%d", W + n) end
local function wake(t) return CHANNEL .. ":rlk:" .. string.format("%d", math.floor(t / 1024)) end
local function grant_msg(t) return string.format("%.0f", t * SHIFT) end
local function held_num(t) return string.format("%.0f", t * SHIFT + W) end
local function held_msg(t, owner) return held_num(t) .. " " .. owner end

-- Today's argument lists.
local function acquire(owner, ticket, lease)
  return r:script("reentrant/acquire", { LOCK, WAITERS, GRANT },
    { tostring(lease or LEASE), owner, tostring(ticket or 0) })
end
local function release(owner, pub)
  return r:script("reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT },
    { owner, tostring(LEASE), tostring(CLAIM), pub or "publish" })
end
local function cancel(ticket)
  return r:script("reentrant/cancel", { LOCK, CHANNEL, WAITERS, GRANT },
    { tostring(ticket), tostring(CLAIM), "publish" })
end
-- The held grants' argument lists.
local function acquire_h(owner, ticket, lease)
  return r:script("reentrant/acquire", { LOCK, WAITERS, GRANT, WHO },
    { tostring(lease or LEASE), owner, tostring(ticket or 0), "held" })
end
local function release_h(owner, pub)
  return r:script("reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT, WHO },
    { owner, tostring(LEASE), tostring(CLAIM), pub or "publish", "held" })
end
local function cancel_h(ticket, owner, pub)
  return r:script("reentrant/cancel", { LOCK, CHANNEL, WAITERS, GRANT, WHO },
    { tostring(ticket), tostring(CLAIM), pub or "publish", "held", owner })
end
local function queue() return r:call("LRANGE", WAITERS, "0", "-1") end
-- Values of other types than hash at the who key (an application's data: rlk owns the name, but
-- refuses what it did not write).
local FOREIGN = { { "SET", "%s", "token" }, sa.OTHER_TYPES.list, sa.OTHER_TYPES.set, sa.OTHER_TYPES.zset }

before_each(function() r:reset() end)

describe("held grants: the values published", function()
  it("a held grant never equals a value published without held grants", function()
    -- Without held grants a wake channel carries t * 2^26 (t >= 2^25): its low 26 bits are 0. The
    -- lock's channel carries 0, 1 and t * 2^26 + next with t < 2^25 and next < 2^26, whose high part
    -- t is below 2^25. A held grant is t * 2^26 + 2^25 with t >= 2^25, on a wake channel only: low
    -- 26 bits 2^25, high part t >= 2^25; and below 2^52, so exact in a double and in %.0f.
    for _, t in ipairs({ W, W + 1, W + 1023, W + 1024, 67108863 }) do
      local v = t * SHIFT + W
      assert.is_true(v < 2 ^ 52)
      assert.equal(W, v % SHIFT)
      assert.equal(t, math.floor(v / SHIFT))
      assert.equal(held_num(t), string.format("%.0f", v))
      assert.are_not.equal(grant_msg(t), held_num(t))
    end
  end)
end)

describe("held grants: old callers", function()
  it("today's argument lists write no who key and get today's replies and messages", function()
    assert.equal(NIL, acquire(A))
    assert.equal(1, acquire(B, W + 1024)[2])     -- first in the queue: {wait, 1}
    assert.is_number(acquire(C, W + 2048))
    r:published()
    assert.equal(2, release(A))
    assert.same({ { channel = wake(W + 1024), message = grant_msg(W + 1024) }, { channel = CHANNEL, message = "0" } },
      r:published())
    assert.equal(tk(1024), r:call("GET", GRANT))
    assert.equal(NIL, acquire(B, -(W + 1024)))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    assert.equal(1, cancel(W + 2048))
    assert.equal(1, release(B))
    assert.equal(0, r:call("EXISTS", WHO, WAITERS, GRANT))
  end)

  it("an old release grants a recorded waiter as today (reservation, t * 2^26, then 0)", function()
    assert.equal(NIL, acquire(A))
    acquire_h(B, W + 1024)
    r:published()
    assert.equal(2, release(A))
    assert.same({ { channel = wake(W + 1024), message = grant_msg(W + 1024) }, { channel = CHANNEL, message = "0" } },
      r:published())
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.equal(tk(1024), r:call("GET", GRANT))
    -- the waiter claims as today; its claim takes its record away
    assert.equal(NIL, acquire_h(B, -(W + 1024)))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    assert.equal(0, r:call("EXISTS", WHO, GRANT))
  end)
end)

describe("held grants: reentrant/acquire", function()
  it("a waiter records its ticket's owner and lease when it queues, with the queue's TTL", function()
    assert.equal(NIL, acquire_h(A))
    local rep = acquire_h(B, W + 1024, 12345)
    assert.equal("table", type(rep))
    assert.equal(1, rep[2])
    assert.same({ tk(1024) }, queue())
    assert.equal("12345 " .. B, r:call("HGET", WHO, tk(1024)))
    assert.is_true(r:call("PTTL", WHO) > 0 and r:call("PTTL", WHO) <= 60000)
    -- a later attempt of the same wait (-t) keeps one entry and one record
    acquire_h(B, -(W + 1024), 12345)
    assert.same({ tk(1024) }, queue())
    assert.same({ tk(1024), "12345 " .. B }, r:call("HGETALL", WHO))
  end)

  it("takes a free lock as today: the fast path writes no record", function()
    assert.equal(NIL, acquire_h(A, W + 1))
    assert.same({ A, "1" }, r:call("HGETALL", LOCK))
    assert.equal(0, r:call("EXISTS", WHO, WAITERS))
  end)

  it("a single try (ticket 0) records nothing", function()
    assert.equal(NIL, acquire_h(A))
    assert.is_number(acquire_h(B, 0))
    assert.equal(0, r:call("EXISTS", WHO, WAITERS))
  end)

  it("a claim of a reservation takes the record away with the ticket", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    r:call("HDEL", WHO, tk(1024))   -- no record: the release reserves, as today
    r:call("HSET", WHO, tk(1024), LEASE .. " " .. B)
    assert.equal(2, release(A))
    assert.equal(NIL, acquire_h(B, -(W + 1024)))
    assert.equal(0, r:call("EXISTS", WHO))
  end)

  it("the granted waiter asking again with its ticket holds once: count unchanged", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    assert.equal(3, release_h(A))
    assert.equal(NIL, acquire_h(B, -(W + 1024)))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    assert.equal(NIL, r:call("HGET", WHO, "held"))
    -- a re-entry after that is an ordinary one
    assert.equal(NIL, acquire_h(B, 0))
    assert.same({ B, "2" }, r:call("HGETALL", LOCK))
  end)

  it("without held, the granted waiter's ticket re-enters as today (why old clients get no held grant)", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    assert.equal(3, release_h(A))
    assert.equal(NIL, acquire(B, -(W + 1024)))
    assert.same({ B, "2" }, r:call("HGETALL", LOCK))
  end)

  it("refuses a who key of another type with RLK_WRONGTYPE and changes nothing", function()
    assert.equal(NIL, acquire_h(A))
    for _, make in ipairs(FOREIGN) do
      r:call("DEL", WHO)
      sa.make(r, make, WHO)
      local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, WHO })
      sa.assert_error(acquire_h(B, W + 1024), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
  end)

  -- A joining waiter pays no TYPE of the who key: its record is written with its ticket, and a
  -- refusal there takes the ticket back out. Every path that touches who refuses a foreign value
  -- with nothing changed; the clock moves first, so that a TTL set anew would show.
  helpers.it_virtual("refuses a foreign who key on every path that touches it, the queue as it was",
      function()
    local scenes = {
      { "joining behind another waiter", function()
        assert.equal(NIL, acquire_h(A))
        acquire_h(B, W + 1024)
      end, function() return acquire_h(C, W + 2048) end },
      { "queued, asking again", function()
        assert.equal(NIL, acquire_h(A))
        acquire_h(B, W + 1024)
      end, function() return acquire_h(B, -(W + 1024)) end },
      { "not queued, asking again", function()
        assert.equal(NIL, acquire_h(A))
        acquire_h(B, W + 1024)
      end, function() return acquire_h(C, -(W + 2048)) end },
      { "granted held, asking again", function()
        assert.equal(NIL, acquire_h(A))
        acquire_h(B, W + 1024)
        acquire_h(C, W + 2048)
        assert.equal(3, release_h(A))
      end, function() return acquire_h(B, -(W + 1024)) end },
      { "claiming its reservation", function()
        assert.equal(NIL, acquire_h(A))
        acquire_h(B, W + 1024)
        acquire_h(C, W + 2048)
        assert.equal(2, release(A))
      end, function() return acquire_h(B, -(W + 1024)) end },
    }
    for _, scene in ipairs(scenes) do
      for _, make in ipairs(FOREIGN) do
        r:reset()
        scene[2]()
        r:call("DEL", WHO)
        sa.make(r, make, WHO)
        r:advance(2000)
        r:published()
        local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, WHO })
        local rep = scene[3]()
        assert.is_table(rep, scene[1])
        assert.is_string(rep.err, scene[1])
        assert.is_truthy(rep.err:find("^RLK_WRONGTYPE who key holds a"), scene[1] .. ": " .. rep.err)
        sa.assert_unchanged(r, before)
      end
    end
  end)

  -- What a handoff by a held grant costs the server, command by command (the mock counts what its
  -- scripts call; real Redis, INFO commandstats): no TYPE on the way, neither in the attempt that
  -- queues the next waiter, nor in the release that hands the lock to it.
  it("a handoff: the queuing attempt runs 7 commands, the release 11, no TYPE", function()
    assert.equal(NIL, acquire_h(A))
    local rep, counts, total = sa.count_commands(r, function() return acquire_h(B, W + 1024) end)
    assert.equal(1, rep[2])
    assert.is_nil(counts.type)
    assert.equal(7, total)
    rep, counts, total = sa.count_commands(r, function() return release_h(A) end)
    assert.equal(3, rep)
    assert.is_nil(counts.type)
    assert.equal(11, total)
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
  end)

  -- A held grant's truth is the lock: its message may be read late (the waiter's process stopped,
  -- its loop not run), after the grant lapsed and another holder came. The ticket is then never
  -- queued again: an old message naming it could pass for a new grant (docs/runtime.md, "Held
  -- grants"). The waiter draws a new ticket instead.
  -- B, queued, is granted the lock held; its lease runs out before it reads the grant.
  local function granted_lapsed()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024, 500)
    assert.equal(3, release_h(A))
    r:call("DEL", LOCK)
  end

  it("a lapsed held grant (lease ran out, another holds): -4, its ticket not queued again, nothing written", function()
    granted_lapsed()
    assert.equal(NIL, acquire_h(C))
    r:published()
    local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, WHO })
    assert.equal(-4, acquire_h(B, -(W + 1024)))
    sa.assert_unchanged(r, before)
    assert.same({}, queue())
    -- a new ticket queues as any new waiter; C's release hands the lock to it
    assert.equal(1, acquire_h(B, W + 1025)[2])
    assert.equal(3, release_h(C))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    assert.equal(tk(1025) .. " " .. B, r:call("HGET", WHO, "held"))
  end)

  it("a lapsed held grant while the free lock is reserved for another ticket: -4, not queued", function()
    granted_lapsed()
    r:call("SET", GRANT, tk(2048), "PX", "5000")    -- a reservation made since (another release)
    r:published()
    local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, WHO })
    assert.equal(-4, acquire_h(B, -(W + 1024)))
    sa.assert_unchanged(r, before)
  end)

  it("a lapsed held grant with the lock free and not reserved: the waiter takes it", function()
    granted_lapsed()
    assert.equal(NIL, acquire_h(B, -(W + 1024)))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    assert.same({}, queue())
  end)

  it("a ticket neither queued nor recorded (its first call never ran, or it was passed over): -4", function()
    assert.equal(NIL, acquire_h(A))
    local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, WHO })
    assert.equal(-4, acquire_h(B, -(W + 1024)))
    sa.assert_unchanged(r, before)
    -- without held grants (today's argument lists) such a ticket is queued again, as before
    assert.equal(1, acquire(B, -(W + 1024))[2])
    assert.same({ tk(1024) }, queue())
  end)

  it("a queued ticket's later attempts stay queued (-t found in the queue)", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    acquire_h(C, W + 2048)
    assert.is_number(acquire_h(C, -(W + 2048)))
    assert.same({ tk(1024), tk(2048) }, queue())
  end)

  it("held is exactly held: anything else in ARGV[4] is a lock-delay and must be an integer", function()
    assert.equal(NIL, acquire_h(A))
    local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, WHO })
    sa.assert_error(r:script("reentrant/acquire", { LOCK, WAITERS, GRANT, WHO },
      { tostring(LEASE), B, tostring(W + 1), "HELD" }), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)
end)

describe("held grants: reentrant/release", function()
  it("writes the lock in the first waiter's name, publishes the held grant and no 0", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024, 20000)
    acquire_h(C, W + 2048)
    r:published()
    assert.equal(3, release_h(A))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    sa.assert_pttl(r, LOCK, 20000, 20000 - sa.TTL_SLACK_MS)
    assert.same({ { channel = wake(W + 1024), message = held_msg(W + 1024, B) } }, r:published())
    assert.equal(0, r:call("EXISTS", GRANT))
    assert.same({ tk(2048) }, queue())
    assert.equal(NIL, r:call("HGET", WHO, tk(1024)))
    assert.equal(tk(1024) .. " " .. B, r:call("HGET", WHO, "held"))
    -- B's release hands on to C the same way
    assert.equal(3, release_h(B))
    assert.same({ C, "1" }, r:call("HGETALL", LOCK))
    assert.equal(tk(2048) .. " " .. C, r:call("HGET", WHO, "held"))
    assert.equal(0, r:call("EXISTS", WAITERS))
  end)

  it("a waiter whose grant reaches nobody is dropped with its record; the next one is served", function()
    r:ssubscribe(wake(W + 2048))             -- sharded: only ticket 2048's client listens
    r:ssubscribe(CHANNEL)
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    acquire_h(C, W + 2048)
    r:published()
    assert.equal(3, release_h(A, "spublish"))
    assert.same({ C, "1" }, r:call("HGETALL", LOCK))
    assert.same({ "held", tk(2048) .. " " .. C }, r:call("HGETALL", WHO))
    assert.equal(0, r:call("EXISTS", WAITERS, GRANT))
    local got = {}
    for _, p in ipairs(r:published()) do
      if p.channel ~= wake(W + 1024) then got[#got + 1] = { channel = p.channel, message = p.message } end
    end
    assert.same({ { channel = wake(W + 2048), message = held_msg(W + 2048, C) } }, got)
  end)

  it("nobody listening at all: the lock is left free, 0 published, the records gone", function()
    r:ssubscribe(CHANNEL)
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    r:published()
    assert.equal(1, release_h(A, "spublish"))
    assert.equal(0, r:call("EXISTS", LOCK, GRANT, WAITERS, WHO))
    local last = r:published()
    assert.same({ channel = CHANNEL, message = "0", sharded = true }, last[#last])
  end)

  it("a ticket without a record is granted as today (reservation, t * 2^26, then 0)", function()
    assert.equal(NIL, acquire_h(A))
    acquire(B, W + 1024)
    r:published()
    assert.equal(2, release_h(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.equal(tk(1024), r:call("GET", GRANT))
    assert.same({ { channel = wake(W + 1024), message = grant_msg(W + 1024) }, { channel = CHANNEL, message = "0" } },
      r:published())
  end)

  it("a ticket below 2^25 (inexact subscriber counts) is granted as today even with a record", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, 11)
    acquire_h(C, 22)
    r:published()
    assert.equal(2, release_h(A))
    assert.equal("11", r:call("GET", GRANT))
    assert.same({ { channel = CHANNEL, message = string.format("%.0f", 11 * SHIFT + 22) },
                  { channel = CHANNEL, message = "0" } }, r:published())
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  it("a release that is not the last exit changes nothing of the queue or the records", function()
    assert.equal(NIL, acquire_h(A))
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    local before = sa.snapshot(r, { WAITERS, WHO, GRANT })
    assert.equal(0, release_h(A))
    sa.assert_unchanged(r, before)
  end)

  it("a record of the releasing holder id is stale: dropped unpublished, the next waiter served", function()
    -- A's wait queued ticket 1024 and gave up, and its cancel never ran; A holds again now.
    assert.equal(NIL, acquire_h(A))
    r:call("RPUSH", WAITERS, tk(1024))
    r:call("HSET", WHO, tk(1024), "5000:9 " .. A)
    acquire_h(C, W + 2048)
    r:published()
    assert.equal(3, release_h(A))
    assert.same({ C, "1" }, r:call("HGETALL", LOCK))
    assert.same({ "held", tk(2048) .. " " .. C }, r:call("HGETALL", WHO))
    assert.equal(0, r:call("EXISTS", WAITERS, GRANT))
    assert.same({ { channel = wake(W + 2048), message = held_msg(W + 2048, C) } }, r:published())
  end)

  it("a stale record of the releasing holder id alone: the lock is left free, 0 published", function()
    assert.equal(NIL, acquire_h(A))
    r:call("RPUSH", WAITERS, tk(1024))
    r:call("HSET", WHO, tk(1024), "5000:9 " .. A)
    r:published()
    assert.equal(1, release_h(A))
    assert.equal(0, r:call("EXISTS", LOCK, GRANT, WAITERS, WHO))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    -- control: the same record of another holder id is granted held
    r:reset()
    assert.equal(NIL, acquire_h(A))
    r:call("RPUSH", WAITERS, tk(1024))
    r:call("HSET", WHO, tk(1024), "5000:9 " .. B)
    assert.equal(3, release_h(A))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
  end)

  it("refuses a who key of another type when someone waits, with nothing changed", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    for _, make in ipairs(FOREIGN) do
      r:call("DEL", WHO)
      sa.make(r, make, WHO)
      local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, WHO })
      sa.assert_error(release_h(A), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
  end)

  it("with nobody waiting the who key is never read: a foreign value there stays as it was", function()
    assert.equal(NIL, acquire_h(A))
    sa.make(r, FOREIGN[1], WHO)
    assert.equal(1, release_h(A))
    assert.equal("token", r:call("GET", WHO))
    assert.equal(-1, r:call("PTTL", WHO))
  end)

  it("refuses ARGV[5] other than held, and held with a lock-delay key as well", function()
    assert.equal(NIL, acquire_h(A))
    local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, WHO })
    sa.assert_error(r:script("reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT, WHO },
      { A, tostring(LEASE), tostring(CLAIM), "publish", "Held" }), "RLK_BADARG")
    sa.assert_error(r:script("reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT, "{res}:rlk_delay", WHO },
      { A, tostring(LEASE), tostring(CLAIM), "publish", "held" }), "RLK_BADARG")
    sa.assert_error(r:script("reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT },
      { A, tostring(LEASE), tostring(CLAIM), "publish", "held" }), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  it("checks the held form's arguments as the 4-argument form's, its usual ones served at once", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    r:published()
    local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, WHO })
    local function rel(owner, lease, claim, pub)
      return r:script("reentrant/release", { LOCK, CHANNEL, WAITERS, GRANT, WHO },
        { owner, lease, claim, pub, "held" })
    end
    for _, bad in ipairs({
      { A, "30000", "50", "PUBLISH", "RLK_BADPUBLISH" },
      { "", "30000", "50", "publish", "RLK_BADOWNER" },
      { string.rep("o", 1025), "30000", "50", "publish", "RLK_BADOWNER" },
      { A, "0", "50", "publish", "RLK_BADLEASE" },
      { A, "030000", "50", "publish", "RLK_BADLEASE" },
      { A, "1000000000001", "50", "publish", "RLK_BADLEASE" },
      { A, "30000", "050", "publish", "RLK_BADARG" },
      { A, "30000", "1000000000001", "publish", "RLK_BADARG" },
    }) do
      sa.assert_error(rel(bad[1], bad[2], bad[3], bad[4]), bad[5])
    end
    sa.assert_unchanged(r, before)
    assert.same({}, r:published())
    -- The longest lease and claim window the checks take, then the client's usual ones.
    assert.equal(3, rel(A, "1000000000000", "1000000000000", "publish"))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    acquire_h(A, W + 2048)
    assert.equal(3, rel(B, "30000", "50", "publish"))
    assert.same({ A, "1" }, r:call("HGETALL", LOCK))
    local pubs = r:published()
    assert.same({ wake(W + 1024), wake(W + 2048) }, { pubs[1].channel, pubs[2] and pubs[2].channel })
  end)
end)

describe("held grants: reentrant/cancel", function()
  -- The lock went on to C, the next waiter (ticket 2048), held: its grant alone published.
  local function assert_c_granted()
    assert.same({ C, "1" }, r:call("HGETALL", LOCK))
    assert.same({ "held", tk(2048) .. " " .. C }, r:call("HGETALL", WHO))
    assert.same({ { channel = wake(W + 2048), message = held_msg(W + 2048, C) } }, r:published())
  end

  it("a waiter that gives up after a held grant gives the lock to the next waiter at once", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    acquire_h(C, W + 2048)
    assert.equal(3, release_h(A))
    r:published()
    assert.equal(3, cancel_h(W + 1024, B))
    assert_c_granted()
  end)

  it("gives it back free, publishing 0, when nobody else waits", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    assert.equal(3, release_h(A))
    r:published()
    assert.equal(3, cancel_h(W + 1024, B))
    assert.equal(0, r:call("EXISTS", LOCK, WHO, GRANT, WAITERS))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    assert.equal(0, cancel_h(W + 1024, B))           -- again: nothing of it is left
  end)

  it("a held grant whose lock is gone meanwhile (lease ran out, force unlock): only the marks go", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    assert.equal(3, release_h(A))
    r:call("DEL", LOCK)
    assert.equal(NIL, acquire_h(C))
    assert.equal(0, cancel_h(W + 1024, B))
    assert.same({ C, "1" }, r:call("HGETALL", LOCK))
    assert.equal(0, r:call("EXISTS", WHO))
  end)

  it("a holder id shared by another process that entered since: one count given back", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    assert.equal(3, release_h(A))
    assert.equal(NIL, acquire_h(B, 0))              -- another process of the same holder id
    assert.equal(3, cancel_h(W + 1024, B))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
  end)

  it("a queued waiter leaves the queue with its record", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    acquire_h(C, W + 2048)
    assert.equal(1, cancel_h(W + 2048, C))
    assert.same({ tk(1024) }, queue())
    assert.same({ tk(1024), LEASE .. " " .. B }, r:call("HGETALL", WHO))
  end)

  it("a give-back skips a stale record of the giving holder id: the next waiter is served", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    assert.equal(3, release_h(A))                   -- held by B, granted; B gives up
    r:call("RPUSH", WAITERS, tk(3072))              -- an earlier wait of B whose cancel never ran
    r:call("HSET", WHO, tk(3072), "5000:9 " .. B)
    acquire_h(C, W + 2048)
    r:published()
    assert.equal(3, cancel_h(W + 1024, B))
    assert_c_granted()
  end)

  it("another ticket's held grant is not given back", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    acquire_h(C, W + 2048)
    assert.equal(3, release_h(A))
    assert.equal(1, cancel_h(W + 2048, C))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    assert.equal(tk(1024) .. " " .. B, r:call("HGET", WHO, "held"))
  end)

  it("a held grant is given back by its own waiter only: another that drew the same ticket just leaves", function()
    -- two waiters of one client draw the same ticket (1 in 1024): the grant's mark names the
    -- ticket and the holder, and the other's cancel must not give the holder's lock away
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    assert.equal(3, release_h(A))                 -- B holds, on the message alone
    acquire_h(C, W + 1024)                         -- C: same client, same ticket
    assert.equal(1, cancel_h(W + 1024, C))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    assert.same({}, queue())
    assert.equal(tk(1024) .. " " .. B, r:call("HGET", WHO, "held"))
  end)

  it("refuses a who key of another type, and ARGV[4] other than held, with nothing changed", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    local before0 = sa.snapshot(r, { LOCK, WAITERS, GRANT, WHO })
    sa.assert_error(r:script("reentrant/cancel", { LOCK, CHANNEL, WAITERS, GRANT, WHO },
      { tk(1024), tostring(CLAIM), "publish", "yes", B }), "RLK_BADARG")
    sa.assert_error(cancel_h(0, B), "RLK_BADARG")
    sa.assert_error(r:script("reentrant/cancel", { LOCK, CHANNEL, WAITERS, GRANT, WHO },
      { tk(1024), "0", "publish", "held", B }), "RLK_BADARG")
    -- held names the waiter: without its holder id, or with an empty one, refused
    sa.assert_error(r:script("reentrant/cancel", { LOCK, CHANNEL, WAITERS, GRANT, WHO },
      { tk(1024), tostring(CLAIM), "publish", "held" }), "RLK_BADARG")
    sa.assert_error(cancel_h(W + 1024, ""), "RLK_BADOWNER")
    sa.assert_error(cancel_h(W + 1024, B, "PUBLISH"), "RLK_BADPUBLISH")
    sa.assert_unchanged(r, before0)
    for _, make in ipairs(FOREIGN) do
      r:call("DEL", WHO)
      sa.make(r, make, WHO)
      local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, WHO })
      sa.assert_error(cancel_h(W + 1024, B), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
  end)
end)

-- held:<wait> names the wait (the client's own number for it, 1..20 digits): the record, the grant's
-- message and the mark carry it, and a cancel or an acknowledging attempt matches it. A later wait
-- of the same holder id that drew the same ticket is another wait: it takes no earlier grant.
local function acquire_w(owner, ticket, wait, lease)
  return r:script("reentrant/acquire", { LOCK, WAITERS, GRANT, WHO },
    { tostring(lease or LEASE), owner, tostring(ticket or 0), "held:" .. wait })
end
local function cancel_w(ticket, owner, wait)
  return r:script("reentrant/cancel", { LOCK, CHANNEL, WAITERS, GRANT, WHO },
    { tostring(ticket), tostring(CLAIM), "publish", "held:" .. wait, owner })
end

describe("held grants: the wait named (held:<wait>)", function()
  it("the record, the grant's message and its mark carry the wait", function()
    assert.equal(NIL, acquire_w(A, 0, "1"))
    acquire_w(B, W + 1024, "18446744073709551615", 20000)
    assert.equal("20000:18446744073709551615 " .. B, r:call("HGET", WHO, tk(1024)))
    r:published()
    assert.equal(3, release_h(A))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    assert.same({ { channel = wake(W + 1024), message = held_num(W + 1024) .. ":18446744073709551615 " .. B } },
      r:published())
    assert.equal(tk(1024) .. ":18446744073709551615 " .. B, r:call("HGET", WHO, "held"))
  end)

  it("the waiter asking again as the same wait holds once; as another wait it is a re-entry", function()
    assert.equal(NIL, acquire_h(A))
    acquire_w(B, W + 1024, "7")
    assert.equal(3, release_h(A))
    assert.equal(NIL, acquire_w(B, -(W + 1024), "7"))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    assert.equal(0, r:call("HEXISTS", WHO, "held"))
    -- control: the same grant, acknowledged by another wait of B (8): the mark is not its own
    r:reset()
    assert.equal(NIL, acquire_h(A))
    acquire_w(B, W + 1024, "7")
    assert.equal(3, release_h(A))
    assert.equal(NIL, acquire_w(B, -(W + 1024), "8"))
    assert.same({ B, "2" }, r:call("HGETALL", LOCK))
    assert.equal(tk(1024) .. ":7 " .. B, r:call("HGET", WHO, "held"))
  end)

  it("a queued waiter that re-enters leaves the queue with its record", function()
    -- B queued ticket 1024; the lock came into B's name another way (a holder id shared by
    -- another process, or a grant to an earlier wait of B): B's next attempt re-enters and its
    -- wait is over, so no later release grants the lock to it again.
    assert.equal(NIL, acquire_h(A))
    acquire_w(B, W + 1024, "7")
    acquire_h(C, W + 2048)
    r:call("DEL", LOCK)
    r:call("HSET", LOCK, B, "1")
    r:call("PEXPIRE", LOCK, "5000")
    assert.equal(NIL, acquire_w(B, -(W + 1024), "7"))
    assert.same({ B, "2" }, r:call("HGETALL", LOCK))
    assert.same({ tk(2048) }, queue())
    assert.equal(NIL, r:call("HGET", WHO, tk(1024)))
    -- without held grants the same: the ticket leaves the queue
    r:reset()
    assert.equal(NIL, acquire(A))
    acquire(B, 11)
    acquire(C, 22)
    r:call("DEL", LOCK)
    r:call("HSET", LOCK, B, "1")
    r:call("PEXPIRE", LOCK, "5000")
    assert.equal(NIL, acquire(B, -11))
    assert.same({ "22" }, queue())
  end)

  it("a give-up gives back its own wait's grant only; a late one of an earlier wait gives nothing", function()
    assert.equal(NIL, acquire_h(A))
    acquire_w(B, W + 1024, "7")
    acquire_w(C, W + 2048, "1")
    assert.equal(3, release_h(A))
    -- wait 6 of B, which drew the same ticket before, gives up late: B's grant stays
    assert.equal(0, cancel_w(W + 1024, B, "6"))
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
    assert.equal(tk(1024) .. ":7 " .. B, r:call("HGET", WHO, "held"))
    assert.same({ tk(2048) }, queue())
    -- wait 7 gives up: the lock goes on to C at once, with C's wait in the message
    r:published()
    assert.equal(3, cancel_w(W + 1024, B, "7"))
    assert.same({ C, "1" }, r:call("HGETALL", LOCK))
    assert.same({ { channel = wake(W + 2048), message = held_num(W + 2048) .. ":1 " .. C } }, r:published())
  end)

  it("a stale grant names the earlier wait: the later wait of the same ticket and owner can tell", function()
    -- B's wait 7 is granted, gives up (the lock goes on to C), and B waits again with the same
    -- ticket (wait 8) while C holds: the message of the first grant names 7, not 8
    assert.equal(NIL, acquire_h(A))
    acquire_w(B, W + 1024, "7")
    acquire_w(C, W + 2048, "1")
    r:published()
    assert.equal(3, release_h(A))
    local stale = r:published()[1].message
    assert.equal(3, cancel_w(W + 1024, B, "7"))
    assert.equal(1, acquire_w(B, W + 1024, "8")[2])    -- queued, first behind C's hold
    assert.same({ C, "1" }, r:call("HGETALL", LOCK))
    assert.equal(held_num(W + 1024) .. ":7 " .. B, stale)
    assert.are_not.equal(held_num(W + 1024) .. ":8 " .. B, stale)
    -- C's release hands the lock to wait 8, in a message of its own
    r:published()
    assert.equal(3, release_h(C))
    assert.same({ { channel = wake(W + 1024), message = held_num(W + 1024) .. ":8 " .. B } }, r:published())
  end)

  it("refuses a wait that is not 1..20 digits, in an attempt and in a give-up, with nothing changed", function()
    assert.equal(NIL, acquire_h(A))
    acquire_w(B, W + 1024, "7")
    local before = sa.snapshot(r, { LOCK, WAITERS, GRANT, WHO })
    for _, bad in ipairs({ "", "x", "-1", "1.5", " 7", "123456789012345678901" }) do
      sa.assert_error(acquire_w(C, W + 2048, bad), "RLK_BADARG")
      sa.assert_error(cancel_w(W + 1024, B, bad), "RLK_BADARG")
    end
    sa.assert_error(r:script("reentrant/acquire", { LOCK, WAITERS, GRANT, WHO },
      { tostring(LEASE), C, tostring(W + 2048), "heldx7" }), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  it("a release reads a record written without a wait as before (an older client's)", function()
    assert.equal(NIL, acquire_h(A))
    acquire_h(B, W + 1024)
    r:published()
    assert.equal(3, release_h(A))
    assert.same({ { channel = wake(W + 1024), message = held_msg(W + 1024, B) } }, r:published())
    assert.equal(tk(1024) .. " " .. B, r:call("HGET", WHO, "held"))
  end)
end)
