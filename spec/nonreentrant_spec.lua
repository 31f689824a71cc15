-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/nonreentrant/*.lua on the backend RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local sa = require("script_asserts")

local NIL = backend.NIL
local LOCK, CHANNEL = "{door}", "redisson_lock__channel:{door}"
local A, B = "5f0c-uuid-a:1", "5f0c-uuid-b:9"
local LEASE = 30000
-- RedissonNonReentrantLock.tryLockInnerAsync (Redisson 4.4.0), its error text as ARGV[3].
local REDISSON_ACQUIRE = [[
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  return redis.error_reply(ARGV[3]);
end;
return redis.call('pttl', KEYS[1]);
]]
-- RedissonLock.unlockInnerAsync, the unlock RedissonNonReentrantLock inherits (without the
-- unlock latch key of Redisson 3.2x, which changes no reply).
local REDISSON_RELEASE = [[
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  return 0;
else
  redis.call('del', KEYS[1]);
  redis.call(ARGV[4], KEYS[2], ARGV[1]);
  return 1;
end;
]]

local r = backend.new()

local function acquire(owner, lease)
  return r:script("nonreentrant/acquire", { LOCK }, { tostring(lease or LEASE), owner })
end
local function release(owner, lease, pub)
  return r:script("nonreentrant/release", { LOCK, CHANNEL }, { owner, tostring(lease or LEASE), pub or "publish" })
end

before_each(function() r:reset() end)

describe("nonreentrant/acquire", function()
  it("takes a free lock: field owner = 1, lease set, nothing published", function()
    assert.equal(NIL, acquire(A))
    assert.same({ A, "1" }, r:call("HGETALL", LOCK))
    sa.assert_pttl(r, LOCK, LEASE, LEASE - sa.TTL_SLACK_MS)
    assert.same({}, r:published())
  end)

  it("refuses a second acquire by the holder with RLK_REENTRY: count, lease and data unchanged", function()
    assert.equal(NIL, acquire(A, 5000))
    r:published()
    local before = sa.snapshot(r, { LOCK })
    sa.assert_error(acquire(A, 600000), "RLK_REENTRY")
    sa.assert_unchanged(r, before)
    assert.equal("1", r:call("HGET", LOCK, A))
  end)

  it("replies the holder's PTTL to another owner and changes nothing", function()
    assert.equal(NIL, acquire(A, 5000))
    local before = sa.snapshot(r, { LOCK })
    local ttl = acquire(B)
    assert.is_number(ttl)
    assert.is_true(ttl > 0 and ttl <= 5000, "ttl " .. tostring(ttl))
    sa.assert_unchanged(r, before)
  end)

  it("replies -1 for a holder without a TTL", function()
    r:call("HSET", LOCK, B, "1")
    assert.equal(-1, acquire(A))
  end)

  it("refuses a re-entry of a reentrant holder's id too (the field exists)", function()
    r:call("HSET", LOCK, A, "3")
    r:call("PEXPIRE", LOCK, "9000")
    local before = sa.snapshot(r, { LOCK })
    sa.assert_error(acquire(A), "RLK_REENTRY")
    sa.assert_unchanged(r, before)
  end)

  it("refuses a lock key that is not a hash with RLK_WRONGTYPE, changing nothing", function()
    for _, setup in ipairs({ { "SET", "%s", "x" }, sa.OTHER_TYPES.list, sa.OTHER_TYPES.set,
                             sa.OTHER_TYPES.zset }) do
      r:call("DEL", LOCK)
      sa.make(r, setup, LOCK)
      local before = sa.snapshot(r, { LOCK })
      sa.assert_error(acquire(A), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
  end)

  describe("refuses bad arguments without changing anything", function()
    before_each(function()
      assert.equal(NIL, acquire(B, 5000))
      r:published()
    end)
    it("a lease that is not an integer in 1..10^12", function()
      for _, lease in ipairs(sa.BAD_LEASES) do
        local before = sa.snapshot(r, { LOCK })
        sa.assert_error(acquire(A, lease), "RLK_BADLEASE")
        sa.assert_unchanged(r, before)
      end
    end)
    it("an empty owner or one longer than 1024 bytes", function()
      for _, owner in ipairs({ "", string.rep("x", 1025) }) do
        local before = sa.snapshot(r, { LOCK })
        sa.assert_error(acquire(owner), "RLK_BADOWNER")
        sa.assert_unchanged(r, before)
      end
    end)
    it("the wrong number of keys or arguments", function()
      for _, case in ipairs({ { {}, { "1000", A } }, { { LOCK, CHANNEL }, { "1000", A } },
                              { { LOCK }, { "1000" } }, { { LOCK }, { "1000", A, "x" } } }) do
        local before = sa.snapshot(r, { LOCK })
        sa.assert_error(r:script("nonreentrant/acquire", case[1], case[2]), "RLK_BADARG")
        sa.assert_unchanged(r, before)
      end
    end)
  end)

  it("gives Redisson's replies on the same data: acquired, PTTL, refused re-entry", function()
    assert.equal(NIL, r:eval(REDISSON_ACQUIRE, { LOCK }, { "5000", A, "NON_REENTRANT_REACQUIRE" }))
    local theirs = r:call("HGETALL", LOCK)
    r:reset()
    assert.equal(NIL, acquire(A, 5000))
    assert.same(theirs, r:call("HGETALL", LOCK))
    -- Redisson's holder seen by rlk, and rlk's holder seen by Redisson.
    assert.is_number(r:eval(REDISSON_ACQUIRE, { LOCK }, { "5000", B, "NON_REENTRANT_REACQUIRE" }))
    local e = r:eval(REDISSON_ACQUIRE, { LOCK }, { "5000", A, "NON_REENTRANT_REACQUIRE" })
    assert.is_table(e)
    assert.truthy(tostring(e.err):find("NON_REENTRANT_REACQUIRE", 1, true))
    r:reset()
    assert.equal(NIL, r:eval(REDISSON_ACQUIRE, { LOCK }, { "5000", B, "NON_REENTRANT_REACQUIRE" }))
    assert.is_number(acquire(A))
  end)
end)

describe("nonreentrant/release", function()
  it("releases the holder's lock: key deleted, message 0 on the lock's channel", function()
    assert.equal(NIL, acquire(A))
    r:published()
    assert.equal(1, release(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    -- Free again: the same owner takes it anew.
    assert.equal(NIL, acquire(A))
  end)

  it("replies nil and changes nothing for an owner that does not hold it, or no lock", function()
    assert.equal(NIL, release(A))
    assert.same({}, r:published())
    assert.equal(NIL, acquire(B, 5000))
    r:published()
    local before = sa.snapshot(r, { LOCK })
    assert.equal(NIL, release(A))
    sa.assert_unchanged(r, before)
  end)

  it("counts down a reentrant holder's count above 1 (as Redisson's unlock): 0, TTL raised to the lease", function()
    r:call("HSET", LOCK, A, "2")
    r:call("PEXPIRE", LOCK, "1000")
    assert.equal(0, release(A, 7000))
    assert.equal("1", r:call("HGET", LOCK, A))
    sa.assert_pttl(r, LOCK, 7000, 7000 - sa.TTL_SLACK_MS)
    assert.same({}, r:published())
  end)

  it("gives Redisson's unlock replies and message on the same data", function()
    for _, who in ipairs({ A, B }) do
      r:reset()
      assert.equal(NIL, acquire(A))
      r:published()
      local theirs = r:eval(REDISSON_RELEASE, { LOCK, CHANNEL }, { "0", tostring(LEASE), who, "publish" })
      local their_msgs, their_keys = r:published(), r:call("EXISTS", LOCK)
      r:reset()
      assert.equal(NIL, acquire(A))
      r:published()
      assert.equal(theirs, release(who))
      assert.same(their_msgs, r:published())
      assert.equal(their_keys, r:call("EXISTS", LOCK))
    end
  end)

  it("refuses a lock key that is not a hash with RLK_WRONGTYPE, changing nothing", function()
    for _, setup in ipairs({ { "SET", "%s", "x" }, sa.OTHER_TYPES.list }) do
      r:call("DEL", LOCK)
      sa.make(r, setup, LOCK)
      local before = sa.snapshot(r, { LOCK })
      sa.assert_error(release(A), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
  end)

  it("refuses bad arguments without changing anything", function()
    assert.equal(NIL, acquire(A, 5000))
    r:published()
    local before = sa.snapshot(r, { LOCK })
    for _, lease in ipairs(sa.BAD_LEASES) do
      sa.assert_error(release(A, lease), "RLK_BADLEASE")
    end
    for _, owner in ipairs({ "", string.rep("x", 1025) }) do
      sa.assert_error(release(owner), "RLK_BADOWNER")
    end
    for _, case in ipairs({ { { LOCK }, { A, "1000", "publish" } }, { { LOCK, CHANNEL }, { A, "1000" } } }) do
      sa.assert_error(r:script("nonreentrant/release", case[1], case[2]), "RLK_BADARG")
    end
    sa.assert_unchanged(r, before)
  end)

  sa.publish_cases(r, { LOCK }, function() assert.equal(NIL, acquire(A)) end,
    function(pub) return release(A, LEASE, pub) end, CHANNEL)
end)

describe("fair/nonreentrant_acquire", function()
  local FLOCK, QUEUE, TIMEOUTS = "{fdoor}", "redisson_lock_queue:{fdoor}", "redisson_lock_timeout:{fdoor}"
  local FCHANNEL = "redisson_lock__channel:{fdoor}"
  local C = "5f0c-uuid-c:3"
  local function facquire(owner, lease, wait)
    return r:script("fair/nonreentrant_acquire", { FLOCK, QUEUE, TIMEOUTS },
      { tostring(lease or LEASE), owner, tostring(wait or 10000) })
  end
  local function frelease(owner)
    return r:script("fair/release", { FLOCK, QUEUE, TIMEOUTS, FCHANNEL }, { owner, tostring(LEASE), "publish" })
  end

  it("takes a free lock: field owner = 1, lease set, no queue", function()
    assert.equal(NIL, facquire(A))
    assert.same({ A, "1" }, r:call("HGETALL", FLOCK))
    sa.assert_pttl(r, FLOCK, LEASE, LEASE - sa.TTL_SLACK_MS)
    assert.equal(0, r:call("EXISTS", QUEUE, TIMEOUTS))
  end)

  it("refuses the holder with RLK_REENTRY and changes nothing, queue included", function()
    assert.equal(NIL, facquire(A, 5000))
    assert.is_number(facquire(B))                  -- B queued behind A
    local before = sa.snapshot(r, { FLOCK, QUEUE, TIMEOUTS })
    sa.assert_error(facquire(A, 600000), "RLK_REENTRY")
    sa.assert_unchanged(r, before)
    assert.equal("1", r:call("HGET", FLOCK, A))
  end)

  it("hands the lock over in FIFO order: the first waiter, not a later one, takes it", function()
    assert.equal(NIL, facquire(A))
    assert.is_number(facquire(B))
    assert.is_number(facquire(C))
    assert.same({ B, C }, r:call("LRANGE", QUEUE, 0, -1))
    assert.equal(1, frelease(A))
    assert.is_number(facquire(C))                  -- not first: still waits
    assert.equal(NIL, facquire(B))                 -- first: takes it, leaves the queue
    assert.same({ C }, r:call("LRANGE", QUEUE, 0, -1))
    sa.assert_error(facquire(B), "RLK_REENTRY")
  end)

  it("refuses bad arguments and wrong types without changing anything", function()
    assert.equal(NIL, facquire(A, 5000))
    local before = sa.snapshot(r, { FLOCK, QUEUE, TIMEOUTS })
    for _, lease in ipairs(sa.BAD_LEASES) do
      sa.assert_error(facquire(B, lease), "RLK_BADLEASE")
      sa.assert_error(facquire(B, 1000, lease), "RLK_BADARG")
    end
    sa.assert_error(facquire(""), "RLK_BADOWNER")
    sa.assert_error(r:script("fair/nonreentrant_acquire", { FLOCK, QUEUE }, { "1000", B, "1000" }), "RLK_BADARG")
    sa.assert_unchanged(r, before)
    r:reset()
    r:call("SET", FLOCK, "x")
    sa.assert_error(facquire(A), "RLK_WRONGTYPE")
  end)
end)
