-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/fenced/*.lua on the backend RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local helpers = require("support.helpers")
local sa = require("script_asserts")

local NIL = backend.NIL
local LOCK, CHANNEL, TOKEN = "{ledger}", "redisson_lock__channel:{ledger}", "redisson_lock_token:{ledger}"
local A, B = "5f0c-uuid-a:1", "5f0c-uuid-b:9"
local LEASE = 30000
local OLD_GRACE = 3600000 -- version 1 let the token key expire this long after the lock
local REDISSON_ACQUIRE = [[
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  local token = redis.call('incr', KEYS[2]);
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return {-1, token};
end;
return {redis.call('pttl', KEYS[1]), -1};
]] -- RedissonFencedLock.tryLockInnerAsync (Redisson 3.2x): INCR, never a TTL on the token key
local it_virtual = helpers.it_virtual

local r = backend.new()

local function acquire(owner, lease)
  return r:script("fenced/acquire", { LOCK, TOKEN }, { tostring(lease or LEASE), owner })
end
local function release(owner, lease, pub)
  return r:script("fenced/release", { LOCK, CHANNEL, TOKEN }, { owner, tostring(lease or LEASE), pub or "publish" })
end
local function renew(owner, lease)
  return r:script("fenced/renew", { LOCK, TOKEN }, { tostring(lease or LEASE), owner })
end
local function token() return r:script("fenced/token", { TOKEN }, {}) end

-- The server's clock in microseconds (TIME), as the scripts read it.
local function server_us()
  local t = r:call("TIME")
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The token of an acquired reply ({token}); fails on any other reply.
local function token_of(reply)
  assert.is_table(reply, "expected an acquired reply {token}")
  assert.is_nil(reply.err, reply.err)
  assert.equal(1, #reply)
  assert.is_number(reply[1])
  return reply[1]
end

-- Acquires (or re-enters) for owner and returns the token issued.
local function acquire_token(owner, lease)
  return token_of(acquire(owner, lease))
end

local function stored_token() return tonumber(r:call("GET", TOKEN)) end

before_each(function() r:reset() end)

-- Wrong-type lock key, or token key that is not a string holding an integer below 2^53-1:
-- RLK_WRONGTYPE and both keys untouched.
local function wrongtype_cases(call)
  it("refuses a lock key that is not a hash, or a bad token key, with RLK_WRONGTYPE", function()
    local setups = { { LOCK, { "SET", "%s", "x" } } }
    for _, k in ipairs({ "list", "set", "zset" }) do
      setups[#setups + 1] = { LOCK, sa.OTHER_TYPES[k] }
      setups[#setups + 1] = { TOKEN, sa.OTHER_TYPES[k] }
    end
    setups[#setups + 1] = { TOKEN, { "HSET", "%s", "f", "1" } }
    for _, v in ipairs({ "abc", "", "1.5", "01", "+1", "-0", "9007199254740991", "9007199254740992",
                         "99999999999999999999" }) do
      setups[#setups + 1] = { TOKEN, { "SET", "%s", v } }
    end
    for _, setup in ipairs(setups) do
      r:call("DEL", LOCK, TOKEN)
      if setup[1] == TOKEN then r:call("HSET", LOCK, A, "1") end
      sa.make(r, setup[2], setup[1])
      r:published()
      local before = sa.snapshot(r, { LOCK, TOKEN })
      sa.assert_error(call(), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
  end)
end

-- Bad leases, bad owners and wrong counts; each refused call leaves the lock and token as they were.
-- call(lease, owner) runs the script with those two arguments.
local function validation_cases(call, scripted)
  describe("refuses bad arguments without changing anything", function()
    before_each(function()
      token_of(acquire(A, 5000))
      r:published()
    end)

    it("a lease that is not an integer in 1..10^12", function()
      for _, lease in ipairs(sa.BAD_LEASES) do
        local before = sa.snapshot(r, { LOCK, TOKEN })
        sa.assert_error(call(lease, A), "RLK_BADLEASE")
        sa.assert_unchanged(r, before)
      end
    end)

    it("an empty owner or one longer than 1024 bytes", function()
      for _, owner in ipairs({ "", string.rep("x", 1025) }) do
        local before = sa.snapshot(r, { LOCK, TOKEN })
        sa.assert_error(call("60000", owner), "RLK_BADOWNER")
        sa.assert_unchanged(r, before)
      end
    end)

    it("the wrong number of keys or arguments", function()
      for _, case in ipairs(scripted) do
        local before = sa.snapshot(r, { LOCK, TOKEN })
        sa.assert_error(r:script(case[1], case[2], case[3]), "RLK_BADARG")
        sa.assert_unchanged(r, before)
      end
    end)
  end)
end

describe("fenced/acquire", function()
  it("takes a free lock: count 1, lease set, token = server TIME in us, token key without a TTL", function()
    local t0 = server_us()
    local t = acquire_token(A)
    local t1 = server_us()
    assert.is_true(t >= t0 and t <= t1, string.format("token %.0f not in %.0f..%.0f", t, t0, t1))
    assert.same({ A, "1" }, r:call("HGETALL", LOCK))
    sa.assert_pttl(r, LOCK, LEASE, LEASE - sa.TTL_SLACK_MS)
    assert.equal(t, stored_token())
    assert.equal(-1, r:call("PTTL", TOKEN))
    assert.same({}, r:published())
  end)

  it("re-enters for the same owner with a new, larger token (every acquisition gets one)", function()
    local t1 = acquire_token(A, 2000)
    local t2 = acquire_token(A, 600000)
    assert.is_true(t2 > t1)
    assert.equal("2", r:call("HGET", LOCK, A))
    sa.assert_pttl(r, LOCK, 600000, 600000 - sa.TTL_SLACK_MS)
    assert.equal(t2, stored_token())
  end)

  it("refuses another owner with the holder's PTTL and issues no token", function()
    acquire_token(A, 20000)
    local before = sa.snapshot(r, { LOCK, TOKEN })
    local ttl = acquire(B, 600000)
    assert.is_number(ttl)
    assert.is_true(ttl > 0 and ttl <= 20000, "PTTL reply " .. ttl)
    sa.assert_unchanged(r, before)
  end)

  it("replies -1, not an acquired reply, when the holder's hash has no TTL", function()
    r:call("HSET", LOCK, B, "1")
    assert.equal(-1, acquire(A))
    assert.equal(0, r:call("EXISTS", TOKEN))
  end)

  it("issues strictly increasing tokens across owners and releases", function()
    local last = 0
    for i = 1, 20 do
      local owner = (i % 2 == 0) and A or B
      local t = acquire_token(owner)
      assert.is_true(t > last, string.format("token %.0f after %.0f", t, last))
      last = t
      assert.equal(1, release(owner))
    end
  end)

  it("jumps a small (Redisson INCR) token up to the server's TIME in us", function()
    r:call("SET", TOKEN, "41")
    local t0 = server_us()
    local t = acquire_token(A)
    assert.is_true(t >= t0 and t <= server_us())
  end)

  it("counts on from a token ahead of the clock", function()
    local ahead = server_us() + 5000 * 1000000 -- 5000 s ahead
    r:call("SET", TOKEN, string.format("%.0f", ahead))
    assert.equal(ahead + 1, acquire_token(A))
    assert.equal(ahead + 1, stored_token())
    assert.equal(-1, r:call("PTTL", TOKEN))
  end)

  it("drops a TTL that version 1 left on the token key", function()
    r:call("SET", TOKEN, "41", "PX", tostring(OLD_GRACE))
    acquire_token(A)
    assert.equal(-1, r:call("PTTL", TOKEN))
  end)

  it("accepts a stored token up to 2^53-2 and issues 2^53-1 exactly", function()
    r:call("SET", TOKEN, "9007199254740990")
    assert.equal(9007199254740991, acquire_token(A))
    assert.equal("9007199254740991", r:call("GET", TOKEN))
  end)

  it("accepts the smallest and the largest lease, and an owner of 1024 bytes", function()
    local owner = string.rep("o", 1024)
    acquire_token(owner, "1000000000000")
    sa.assert_pttl(r, LOCK, 1000000000000, 1000000000000 - sa.TTL_SLACK_MS)
    assert.equal(-1, r:call("PTTL", TOKEN))
    -- Re-entry with a 1 ms lease: accepted (a token comes back), and the hold keeps its longer
    -- lease (a re-entry never shortens it).
    acquire_token(owner, "1")
    sa.assert_pttl(r, LOCK, 1000000000000, 1000000000000 - sa.TTL_SLACK_MS)
  end)

  it_virtual("lets another owner in once the lease ran out, with a larger token", function()
    local t1 = acquire_token(A, 1000)
    r:advance(999)
    assert.equal(1, acquire(B))
    r:advance(1)
    assert.equal(0, acquire(B)) -- Redis expires a key once the clock is past its expire time
    r:advance(1)
    local t2 = acquire_token(B)
    assert.is_true(t2 > t1)
    assert.same({ B, "1" }, r:call("HGETALL", LOCK))
  end)

  it_virtual("keeps the token key for good after the lock expired (no TTL, as Redisson's)", function()
    local t1 = acquire_token(A, 1000)
    r:advance(1000 + 2 * OLD_GRACE)
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.equal(t1, stored_token())
  end)

  it_virtual("never goes back when a Redisson client (INCR) takes the lock long after rlk", function()
    local last = acquire_token(A, 1000)
    assert.equal(1, release(A))
    r:advance(1000 + OLD_GRACE + 1) -- version 1's token key had expired by now
    for i = 1, 6 do
      local t
      if i % 2 == 1 then
        local reply = r:eval(REDISSON_ACQUIRE, { LOCK, TOKEN }, { "1000", B })
        assert.equal(-1, reply[1])
        t = reply[2]
        assert.equal(1, release(B))
      else
        t = acquire_token(A, 1000)
        assert.equal(1, release(A))
      end
      assert.is_true(t > last, string.format("token %.0f after %.0f", t, last))
      last = t
      r:advance(2 * OLD_GRACE)
    end
  end)

  it_virtual("never goes back after the token key was lost: the next token is the later TIME", function()
    local t1 = acquire_token(A, 1000)
    assert.equal(1, release(A))
    r:advance(1000)
    r:call("DEL", TOKEN) -- FLUSHDB, a failover that lost the last write
    assert.equal(0, token())
    local t2 = acquire_token(B, 1000)
    assert.is_true(t2 > t1, string.format("token %.0f after %.0f", t2, t1))
  end)

  it_virtual("never goes back when the server clock steps back while the token key lives", function()
    local t1 = acquire_token(A, 1000)
    assert.equal(1, release(A))
    r.mock:set_now(r:time_ms() - 600000)
    local t2 = acquire_token(B, 1000)
    assert.equal(t1 + 1, t2)
  end)

  wrongtype_cases(function() return acquire(A) end)
  validation_cases(function(lease, owner) return acquire(owner, lease) end, {
    { "fenced/acquire", { LOCK }, { "1000", A } },
    { "fenced/acquire", { LOCK, TOKEN, CHANNEL }, { "1000", A } },
    { "fenced/acquire", { LOCK, TOKEN }, { "1000" } },
    { "fenced/acquire", { LOCK, TOKEN }, { "1000", A, "extra" } },
  })
end)

describe("fenced/release", function()
  it("releases the last hold: lock deleted, 0 published, token key kept without a TTL", function()
    local t = acquire_token(A)
    r:call("PEXPIRE", TOKEN, tostring(OLD_GRACE)) -- as version 1 left it
    r:published()
    assert.equal(1, release(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    assert.equal(t, stored_token())
    assert.equal(-1, r:call("PTTL", TOKEN))
  end)

  it("leaves one reentry: count - 1, lease reset, token key without a TTL", function()
    acquire_token(A, 2000)
    acquire_token(A, 2000)
    r:published()
    assert.equal(0, release(A, 7200000))
    assert.equal("1", r:call("HGET", LOCK, A))
    sa.assert_pttl(r, LOCK, 7200000, 7200000 - sa.TTL_SLACK_MS)
    assert.equal(-1, r:call("PTTL", TOKEN))
    assert.same({}, r:published())
  end)

  it("leaves one reentry without recreating a token key someone deleted", function()
    acquire_token(A)
    acquire_token(A)
    r:call("DEL", TOKEN)
    assert.equal(0, release(A))
    assert.equal(0, r:call("EXISTS", TOKEN))
  end)

  it("replies nil to another owner and changes nothing", function()
    acquire_token(A)
    r:published()
    local before = sa.snapshot(r, { LOCK, TOKEN })
    assert.equal(NIL, release(B))
    sa.assert_unchanged(r, before)
  end)

  it("replies nil when there is no lock, creates nothing and publishes nothing", function()
    assert.equal(NIL, release(A))
    assert.equal(0, r:call("EXISTS", LOCK, TOKEN))
    assert.same({}, r:published())
  end)

  it_virtual("replies nil once the lease ran out", function()
    acquire_token(A, 1000)
    r:advance(1001)
    r:published()
    assert.equal(NIL, release(A))
    assert.same({}, r:published())
  end)

  wrongtype_cases(function() return release(A) end)
  validation_cases(function(lease, owner) return release(owner, lease) end, {
    { "fenced/release", { LOCK, CHANNEL }, { A, "1000", "publish" } },
    { "fenced/release", { LOCK, CHANNEL, TOKEN, "x" }, { A, "1000", "publish" } },
    { "fenced/release", { LOCK, CHANNEL, TOKEN }, { A, "1000" } },
    { "fenced/release", { LOCK, CHANNEL, TOKEN }, { A, "1000", "publish", "0" } },
  })
  sa.publish_cases(r, { LOCK, TOKEN }, function() assert.is_table(acquire(A)) end,
    function(pub) return release(A, nil, pub) end, CHANNEL)
end)

describe("fenced/renew", function()
  it("resets the lease of a lock the owner holds; the token key keeps no TTL", function()
    local t = acquire_token(A, 2000)
    r:call("PEXPIRE", TOKEN, tostring(OLD_GRACE)) -- as version 1 left it
    assert.equal(1, renew(A, 7200000))
    sa.assert_pttl(r, LOCK, 7200000, 7200000 - sa.TTL_SLACK_MS)
    assert.equal(-1, r:call("PTTL", TOKEN))
    assert.equal(t, stored_token())
    assert.equal("1", r:call("HGET", LOCK, A))
  end)

  it("replies 1 without recreating a token key someone deleted", function()
    acquire_token(A)
    r:call("DEL", TOKEN)
    assert.equal(1, renew(A))
    assert.equal(0, r:call("EXISTS", TOKEN))
  end)

  it("replies 0 to another owner and changes nothing", function()
    acquire_token(A, 5000)
    local before = sa.snapshot(r, { LOCK, TOKEN })
    assert.equal(0, renew(B, 600000))
    sa.assert_unchanged(r, before)
  end)

  it("replies 0 when there is no lock and creates nothing", function()
    assert.equal(0, renew(A))
    assert.equal(0, r:call("EXISTS", LOCK, TOKEN))
  end)

  it_virtual("replies 0 once the lease ran out (the watchdog's lost-lock signal)", function()
    acquire_token(A, 1000)
    r:advance(1001)
    assert.equal(0, renew(A))
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  it_virtual("keeps the token key while the watchdog renews the lock and after it", function()
    local t = acquire_token(A, 1200000)
    for _ = 1, 2 * OLD_GRACE / 600000 do
      r:advance(600000)
      assert.equal(1, renew(A, 1200000))
    end
    assert.equal(t, stored_token())
    assert.equal(1, release(A))
    r:advance(1200000 + 2 * OLD_GRACE)
    assert.equal(t, stored_token())
  end)

  wrongtype_cases(function() return renew(A) end)
  validation_cases(function(lease, owner) return renew(owner, lease) end, {
    { "fenced/renew", { LOCK }, { "1000", A } },
    { "fenced/renew", { LOCK, TOKEN, CHANNEL }, { "1000", A } },
    { "fenced/renew", { LOCK, TOKEN }, { "1000" } },
    { "fenced/renew", { LOCK, TOKEN }, { "1000", A, "1", "extra" } },
  })
end)

-- The renewal names the hold's token (ARGV[3]): one holder id may hold from several processes (a
-- nested rlk, a child handed the id, an incarnation that restarted), and a holder whose hold
-- ran out must not renew the hold its id took again elsewhere with a newer token: it hears 0
-- (the watchdog's RLK_LOST_GONE). A re-entry with the enclosing hold's token (fenced/reenter)
-- keeps that token, so a shared-id nesting still renews.
describe("fenced/renew with the hold's token", function()
  local function tok_s(t) return string.format("%.0f", t) end
  local function renew_t(owner, t, lease)
    return r:script("fenced/renew", { LOCK, TOKEN }, { tostring(lease or LEASE), owner, tok_s(t) })
  end
  local function reenter(owner, t)
    return r:script("fenced/reenter", { LOCK, TOKEN }, { tostring(LEASE), owner, tok_s(t) })
  end

  it("renews the hold its token names while that token is the last issued", function()
    local t = acquire_token(A, 2000)
    assert.equal(1, renew_t(A, t, 7200000))
    sa.assert_pttl(r, LOCK, 7200000, 7200000 - sa.TTL_SLACK_MS)
    assert.equal(-1, r:call("PTTL", TOKEN))
    assert.equal(t, stored_token())
  end)

  it("replies 0 to the old incarnation of the holder id once it holds again with a newer token", function()
    local t1 = acquire_token(A, 1000)
    r:call("DEL", LOCK) -- the first hold's lease ran out (its process was paused)
    local t2 = acquire_token(A, 5000)
    assert.is_true(t2 > t1)
    local before = sa.snapshot(r, { LOCK, TOKEN })
    assert.equal(0, renew_t(A, t1, 600000))
    sa.assert_unchanged(r, before)
    assert.equal(1, renew_t(A, t2, 600000))
  end)

  it("a re-entry with the hold's token (fenced/reenter) keeps it: the enclosing holder renews", function()
    local t = acquire_token(A, 5000)
    assert.equal(t, token_of(reenter(A, t)))
    assert.equal(1, renew_t(A, t))
    assert.equal("2", r:call("HGET", LOCK, A))
  end)

  it("a re-entry that minted a newer token (fenced/acquire) fences the older token's renewal", function()
    local t1 = acquire_token(A, 5000)
    local t2 = acquire_token(A, 5000)
    local before = sa.snapshot(r, { LOCK, TOKEN })
    assert.equal(0, renew_t(A, t1, 600000))
    sa.assert_unchanged(r, before)
    assert.equal(1, renew_t(A, t2, 600000))
  end)

  it("replies 0 to another holder, with no lock, and with no token key; changes nothing", function()
    local t = acquire_token(A, 5000)
    local before = sa.snapshot(r, { LOCK, TOKEN })
    assert.equal(0, renew_t(B, t))
    sa.assert_unchanged(r, before)
    r:call("DEL", TOKEN)
    before = sa.snapshot(r, { LOCK, TOKEN })
    assert.equal(0, renew_t(A, t))
    sa.assert_unchanged(r, before)
    r:call("DEL", LOCK)
    assert.equal(0, renew_t(A, t))
    assert.equal(0, r:call("EXISTS", LOCK, TOKEN))
  end)

  it("refuses a token that is not a decimal integer in 1..2^53-2 without changing anything", function()
    acquire_token(A, 5000)
    local before = sa.snapshot(r, { LOCK, TOKEN })
    for _, bad in ipairs({ "", "0", "-1", "+1", "01", "1.5", "abc", "1e3", "9007199254740991",
                           "99999999999999999" }) do
      sa.assert_error(r:script("fenced/renew", { LOCK, TOKEN }, { tostring(LEASE), A, bad }), "RLK_BADARG")
    end
    sa.assert_error(r:script("fenced/renew", { LOCK, TOKEN }, { tostring(LEASE), A, "1", "x" }), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  it("checks the lease and the owner before the token", function()
    local t = acquire_token(A, 5000)
    sa.assert_error(r:script("fenced/renew", { LOCK, TOKEN }, { "0", A, tok_s(t) }), "RLK_BADLEASE")
    sa.assert_error(r:script("fenced/renew", { LOCK, TOKEN }, { tostring(LEASE), "", tok_s(t) }), "RLK_BADOWNER")
  end)

  wrongtype_cases(function() return renew_t(A, 1) end)
end)

describe("fenced/token", function()
  it("replies 0 when no token was issued and creates nothing", function()
    assert.equal(0, token())
    assert.equal(0, r:call("EXISTS", TOKEN))
  end)

  it("replies the last token issued without changing anything", function()
    acquire_token(A)
    local t = acquire_token(A)
    local before = sa.snapshot(r, { LOCK, TOKEN })
    assert.equal(t, token())
    sa.assert_unchanged(r, before)
    assert.equal(0, release(A))
    assert.equal(1, release(A))
    assert.equal(t, token())
  end)

  it("refuses a token key that is not a string holding an integer below 2^53-1", function()
    local setups = { { "HSET", "%s", "f", "1" } }
    for _, k in ipairs({ "list", "set", "zset" }) do setups[#setups + 1] = sa.OTHER_TYPES[k] end
    for _, v in ipairs({ "abc", "", "1.5", "01", "9007199254740991" }) do setups[#setups + 1] = { "SET", "%s", v } end
    for _, setup in ipairs(setups) do
      r:call("DEL", TOKEN)
      sa.make(r, setup, TOKEN)
      local before = sa.snapshot(r, { TOKEN })
      sa.assert_error(token(), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
  end)

  it("refuses keys or arguments it does not take", function()
    r:call("SET", TOKEN, "7")
    for _, case in ipairs({ { {}, {} }, { { TOKEN, LOCK }, {} }, { { TOKEN }, { "1" } } }) do
      local before = sa.snapshot(r, { TOKEN })
      sa.assert_error(r:script("fenced/token", case[1], case[2]), "RLK_BADARG")
      sa.assert_unchanged(r, before)
    end
  end)
end)

describe("fenced/held", function()
  local function held(owner) return r:script("fenced/held", { LOCK, TOKEN }, { owner }) end

  it("replies {0, 0, -2} when owner holds nothing, and creates nothing", function()
    assert.same({ 0, 0, -2 }, held(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.equal(0, r:call("EXISTS", TOKEN))
  end)

  it("replies owner's count, its hold's token and the PTTL in one read, changing nothing", function()
    acquire_token(A)
    local t = acquire_token(A)
    local before = sa.snapshot(r, { LOCK, TOKEN })
    local got = held(A)
    sa.assert_unchanged(r, before)
    assert.equal(2, got[1])
    assert.equal(t, got[2])
    assert.is_true(got[3] > 0 and got[3] <= LEASE, "PTTL " .. tostring(got[3]))
  end)

  it("never gives another holder's token: once the lock is another's, owner counts 0", function()
    local t = acquire_token(A, 1000)
    r:call("DEL", LOCK) -- A's lease ran out
    local tb = acquire_token(B)
    assert.is_true(tb > t)
    assert.same({ 0, 0, -2 }, held(A))
    assert.equal(tb, held(B)[2])
  end)

  it_virtual("counts a hold whose lease ran out as none", function()
    acquire_token(A, 100)
    r:advance(101)
    assert.same({ 0, 0, -2 }, held(A))
  end)

  it("replies PTTL -1 for a hold without a TTL (the caller does not adopt it)", function()
    local t = acquire_token(A)
    r:call("PERSIST", LOCK)
    assert.same({ 1, t, -1 }, held(A))
  end)

  it("refuses a lock key that is not a hash, or a bad token key, changing nothing", function()
    for _, setup in ipairs({ { "SET", "%s", "x" }, sa.OTHER_TYPES.list }) do
      r:reset()
      sa.make(r, setup, LOCK)
      local before = sa.snapshot(r, { LOCK, TOKEN })
      sa.assert_error(held(A), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
    r:reset()
    acquire_token(A)
    r:call("SET", TOKEN, "abc")
    sa.assert_error(held(A), "RLK_WRONGTYPE")
  end)

  it("refuses keys or arguments it does not take", function()
    for _, case in ipairs({ { { LOCK }, { A } }, { { LOCK, TOKEN }, {} }, { { LOCK, TOKEN }, { A, "x" } },
                            { { LOCK, TOKEN }, { "" } }, { { LOCK, TOKEN }, { string.rep("o", 1025) } } }) do
      local err = (#case[1] == 2 and #case[2] == 1) and "RLK_BADOWNER" or "RLK_BADARG"
      sa.assert_error(r:script("fenced/held", case[1], case[2]), err)
    end
  end)
end)

describe("fenced/reenter", function()
  local function reenter(owner, tok, lease)
    return r:script("fenced/reenter", { LOCK, TOKEN }, { tostring(lease or LEASE), owner, tostring(tok) })
  end
  local function tok_s(t) return string.format("%.0f", t) end

  it("re-enters owner's hold with the last token issued: that token again, none minted", function()
    local t = acquire_token(A, 1000)
    assert.equal(t, token_of(reenter(A, tok_s(t))))
    assert.equal("2", r:call("HGET", LOCK, A))
    assert.equal(t, stored_token())
    sa.assert_pttl(r, LOCK, LEASE)
    -- counted as a re-entry: the first release leaves the hold, the second frees the lock
    assert.equal(0, release(A))
    assert.equal(1, release(A))
    assert.equal(0, r:call("EXISTS", LOCK))
  end)

  it("acquires a free lock as fenced/acquire does: a new, larger token (the enclosing hold is gone)", function()
    local t = acquire_token(A)
    assert.equal(1, release(A))
    local t2 = token_of(reenter(A, tok_s(t)))
    assert.is_true(t2 > t)
    assert.equal(t2, stored_token())
    assert.equal("1", r:call("HGET", LOCK, A))
  end)

  it("mints a new token when another was issued since the given one (a later acquisition)", function()
    local t1 = acquire_token(A)
    local t2 = acquire_token(A) -- a re-entry that minted
    local t3 = token_of(reenter(A, tok_s(t1)))
    assert.is_true(t3 > t2)
    assert.equal(t3, stored_token())
    assert.equal("3", r:call("HGET", LOCK, A))
    -- and a token above the last issued (never issued by this key) is not handed back either
    local t4 = token_of(reenter(A, tok_s(t3 + 5)))
    assert.is_true(t4 > t3)
    assert.equal(t4, stored_token())
  end)

  it("refuses another holder with its PTTL and changes nothing", function()
    local t = acquire_token(A)
    local before = sa.snapshot(r, { LOCK, TOKEN })
    local ttl = reenter(B, tok_s(t))
    assert.is_number(ttl)
    assert.is_true(ttl > 0 and ttl <= LEASE)
    sa.assert_unchanged(r, before)
  end)

  it("refuses bad arguments and wrong types, changing nothing", function()
    local t = tok_s(acquire_token(A))
    local before = sa.snapshot(r, { LOCK, TOKEN })
    for _, c in ipairs({
      { { "0", A, t }, "RLK_BADLEASE" },
      { { tostring(LEASE), "", t }, "RLK_BADOWNER" },
      { { tostring(LEASE), A, "0" }, "RLK_BADARG" },
      { { tostring(LEASE), A, "-1" }, "RLK_BADARG" },
      { { tostring(LEASE), A, "1e3" }, "RLK_BADARG" },
      { { tostring(LEASE), A, "9007199254740991" }, "RLK_BADARG" },
      { { tostring(LEASE), A }, "RLK_BADARG" },
    }) do
      sa.assert_error(r:script("fenced/reenter", { LOCK, TOKEN }, c[1]), c[2])
    end
    sa.assert_error(r:script("fenced/reenter", { LOCK }, { tostring(LEASE), A, t }), "RLK_BADARG")
    sa.assert_unchanged(r, before)
    r:call("SET", TOKEN, "abc")
    sa.assert_error(reenter(A, t), "RLK_WRONGTYPE")
    r:reset()
    r:call("SET", LOCK, "x")
    sa.assert_error(reenter(A, "5"), "RLK_WRONGTYPE")
  end)
end)

-- One holder id may be shared by several processes (a nested `rlk lock --fenced` takes
-- RLK_LOCK_OWNER, an application hands a child its id and token), so a re-entry, a release that
-- leaves a hold and a renewal by one of them must not cut the TTL another counts on: the TTL
-- becomes max(PTTL, lease), and a hold without a TTL keeps none (PEXPIRE ... GT).
describe("fenced: a re-entry never shortens a hold", function()
  local LONG, SHORT = 600000, 1000
  local FLOOR = LONG - sa.TTL_SLACK_MS
  local function reenter(owner, tok, lease)
    return r:script("fenced/reenter", { LOCK, TOKEN },
      { tostring(lease), owner, string.format("%.0f", tok) })
  end

  it("fenced/acquire: a re-entry with a shorter lease keeps the longer PTTL", function()
    acquire_token(A, LONG)
    acquire_token(A, SHORT)
    assert.equal("2", r:call("HGET", LOCK, A))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("fenced/acquire: a re-entry with a longer lease extends it", function()
    acquire_token(A, SHORT)
    acquire_token(A, LONG)
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("fenced/reenter: the handed-down re-entry with a shorter lease keeps the longer PTTL", function()
    local t = acquire_token(A, LONG)
    assert.equal(t, token_of(reenter(A, t, SHORT)))
    assert.equal("2", r:call("HGET", LOCK, A))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("fenced/release: a partial release with a shorter lease keeps the longer PTTL", function()
    acquire_token(A, LONG)
    acquire_token(A, LONG)
    assert.equal(0, release(A, SHORT))
    assert.equal("1", r:call("HGET", LOCK, A))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("fenced/renew: a shorter lease keeps the longer PTTL", function()
    acquire_token(A, LONG)
    assert.equal(1, renew(A, SHORT))
    sa.assert_pttl(r, LOCK, LONG, FLOOR)
  end)

  it("a hold without a TTL keeps none through re-entry, partial release and renewal", function()
    local t = acquire_token(A, LONG)
    r:call("PERSIST", LOCK)
    acquire_token(A, SHORT)
    assert.equal(-1, r:call("PTTL", LOCK))
    assert.is_table(reenter(A, stored_token(), SHORT))
    assert.equal(-1, r:call("PTTL", LOCK))
    assert.equal(0, release(A, SHORT))
    assert.equal(-1, r:call("PTTL", LOCK))
    assert.equal(1, renew(A, SHORT))
    assert.equal(-1, r:call("PTTL", LOCK))
    assert.equal("2", r:call("HGET", LOCK, A))
    assert.is_true(stored_token() > t)
  end)

  it("a fresh acquisition still sets its own lease, however short", function()
    acquire_token(A, SHORT)
    sa.assert_pttl(r, LOCK, SHORT)
  end)
end)
