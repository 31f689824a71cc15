-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/elect/*.lua (leader election on the fenced lock's layout) on the backend
-- RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local helpers = require("support.helpers")
local sa = require("script_asserts")

local LOCK, TOKEN, STATE = "jobs", "redisson_lock_token:{jobs}", "{jobs}:elect"
local LOCK_CH, CH = "redisson_lock__channel:{jobs}", "rlk_elect__channel:{jobs}"
local A, B = "5f0c-uuid-a:1", "5f0c-uuid-b:9"
local LEASE = 30000
local it_virtual = helpers.it_virtual
local NIL = backend.NIL

local r = backend.new()

-- secret: the candidate's incarnation (default: one per owner, as one handle per owner).
local function campaign(owner, value, lease, pub, secret)
  return r:script("elect/campaign", { LOCK, TOKEN, STATE, CH },
    { tostring(lease or LEASE), owner, value or "", pub or "publish", secret or ("s-" .. owner) })
end
local function proclaim(owner, term, value, pub, secret)
  return r:script("elect/proclaim", { LOCK, STATE, CH },
    { owner, tostring(term), value, pub or "publish", secret or ("s-" .. owner) })
end
local function resign(owner, pub, secret)
  return r:script("elect/resign", { LOCK, LOCK_CH, STATE, CH },
    { owner, tostring(LEASE), pub or "publish", secret or ("s-" .. owner) })
end
local function leader() return r:script("elect/leader", { LOCK, STATE }, {}) end
local function renew(owner, term, lease)
  return r:script("elect/renew", { LOCK, TOKEN },
    { tostring(lease or LEASE), owner, type(term) == "number" and string.format("%.0f", term) or term })
end

local function term_of(reply)
  assert.is_table(reply, "expected {term}")
  assert.is_nil(reply.err, reply.err)
  assert.equal(1, #reply)
  assert.is_number(reply[1])
  return reply[1]
end

local KEYS = { LOCK, TOKEN, STATE }
-- A last token above the clock: the next term is exactly it + 1 (the publish cases compare messages).
local function high_token() r:call("SET", TOKEN, "9000000000000000") end

before_each(function() r:reset() end)

describe("elect/campaign", function()
  it("elects a free candidate: lock field, term = the token key, the record, one publication", function()
    r:published()
    local t = term_of(campaign(A, "host-a"))
    assert.equal("1", r:call("HGET", LOCK, A))
    assert.equal(string.format("%.0f", t), r:call("GET", TOKEN))
    assert.same({ "host-a", string.format("%.0f", t), A }, r:call("HMGET", STATE, "value", "term", "holder"))
    sa.assert_pttl(r, LOCK, LEASE)
    local p = r:published()
    assert.equal(1, #p)
    assert.equal(CH, p[1].channel)
    assert.equal("elected " .. string.format("%.0f", t), p[1].message)
  end)

  it("refuses a second candidate with the leader's PTTL and changes nothing", function()
    campaign(A, "a")
    r:published()
    local before = sa.snapshot(r, KEYS)
    local ttl = campaign(B, "b")
    assert.is_number(ttl)
    assert.is_true(ttl > 0 and ttl <= LEASE)
    sa.assert_unchanged(r, before)
    assert.same({}, r:published())
  end)

  it("gives the leader its current term again, lease reset, value and record unchanged", function()
    local t = term_of(campaign(A, "a", 1000))
    r:published()
    assert.equal(t, term_of(campaign(A, "other", LEASE)))
    assert.equal("a", r:call("HGET", STATE, "value"))
    assert.equal("1", r:call("HGET", LOCK, A))
    sa.assert_pttl(r, LOCK, LEASE)
    assert.same({}, r:published())
  end)

  it("refuses the same owner id with another secret (another process): its PTTL, nothing changed", function()
    local t = term_of(campaign(A, "a", 1000))
    r:published()
    local before = sa.snapshot(r, KEYS)
    local ttl = campaign(A, "b", LEASE, "publish", "another-incarnation")
    assert.is_number(ttl)
    assert.is_true(ttl > 0 and ttl <= 1000)
    sa.assert_unchanged(r, before)
    assert.same({}, r:published())
    -- the leader's own secret still gets its term; the secret is never replied
    assert.equal(t, term_of(campaign(A, "a")))
    assert.equal("s-" .. A, r:call("HGET", STATE, "secret"))
    assert.same({ A, t, "a" }, { leader()[1], leader()[2], leader()[3] })
    assert.equal(4, #leader())
  end)

  it("mints a new term for a secret-less record of the same owner (an older version's leader)", function()
    local t = term_of(campaign(A, "a"))
    r:call("HDEL", STATE, "secret")
    assert.is_number(campaign(A, "a")) -- not proven: waits as any other candidate
    assert.equal(NIL, resign(A)) -- nor can it resign: the leadership ends with its lease
    r:call("DEL", LOCK)
    assert.is_true(term_of(campaign(A, "a")) > t)
  end)

  it("mints a larger term for each new leader, above the last token, even after a lost token key", function()
    local t1 = term_of(campaign(A, "a"))
    assert.equal(1, resign(A))
    local t2 = term_of(campaign(B, "b"))
    assert.is_true(t2 > t1)
    r:call("SET", TOKEN, string.format("%.0f", t2 + 1000000000))
    assert.equal(1, resign(B))
    local t3 = term_of(campaign(A, "a"))
    assert.equal(t2 + 1000000001, t3)
    r:call("DEL", TOKEN)
    assert.equal(1, resign(A))
    assert.is_true(term_of(campaign(B, "b")) >= t1) -- TIME in us: at least the first term
  end)

  it_virtual("lets another candidate lead once the leader's lease ran out, with a larger term", function()
    local t1 = term_of(campaign(A, "a", 1000))
    r:advance(999)
    assert.is_number(campaign(B, "b", 1000))
    r:advance(2)
    local t2 = term_of(campaign(B, "b", 1000))
    assert.is_true(t2 > t1)
    assert.same({ B, t2, "b" }, { leader()[1], leader()[2], leader()[3] })
  end)

  it("refuses bad arguments with their codes and changes nothing", function()
    campaign(A, "a")
    r:published()
    local before = sa.snapshot(r, KEYS)
    local cases = {
      { { "0", B, "", "publish", "s" }, "RLK_BADLEASE" },
      { { "x", B, "", "publish", "s" }, "RLK_BADLEASE" },
      { { "1000000000001", B, "", "publish", "s" }, "RLK_BADLEASE" },
      { { tostring(LEASE), "", "", "publish", "s" }, "RLK_BADOWNER" },
      { { tostring(LEASE), string.rep("o", 1025), "", "publish", "s" }, "RLK_BADOWNER" },
      { { tostring(LEASE), B, string.rep("v", 65537), "publish", "s" }, "RLK_BADARG" },
      { { tostring(LEASE), B, "", "publish", "" }, "RLK_BADARG" },
      { { tostring(LEASE), B, "", "publish", string.rep("s", 65) }, "RLK_BADARG" },
      { { tostring(LEASE), B, "", "publish" }, "RLK_BADARG" },
      { { tostring(LEASE), B, "" }, "RLK_BADARG" },
    }
    for _, c in ipairs(cases) do
      sa.assert_error(r:script("elect/campaign", { LOCK, TOKEN, STATE, CH }, c[1]), c[2])
    end
    sa.assert_error(r:script("elect/campaign", { LOCK, TOKEN, STATE }, { tostring(LEASE), B, "", "publish", "s" }),
      "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  it("refuses wrong-typed keys with RLK_WRONGTYPE", function()
    for _, k in ipairs({ LOCK, STATE, TOKEN }) do
      r:reset()
      r:call("RPUSH", k, "x")
      local before = sa.snapshot(r, KEYS)
      sa.assert_error(campaign(A, "a"), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
  end)

  sa.publish_cases(r, KEYS, high_token, function(pub) return campaign(A, "a", nil, pub) end, CH)
end)

describe("elect/proclaim", function()
  it("lets the leader of the term replace the value and publishes it", function()
    local t = term_of(campaign(A, "a"))
    r:published()
    assert.equal(1, proclaim(A, string.format("%.0f", t), "a2"))
    assert.equal("a2", r:call("HGET", STATE, "value"))
    local p = r:published()
    assert.equal(1, #p)
    assert.equal("proclaimed " .. string.format("%.0f", t), p[1].message)
  end)

  it("refuses another holder, an old term, and a leader whose lock is gone (0, nothing changed)", function()
    local t1 = term_of(campaign(A, "a"))
    assert.equal(1, resign(A))
    local t2 = term_of(campaign(B, "b"))
    r:published()
    assert.equal(0, proclaim(A, string.format("%.0f", t1), "x")) -- old leader, old term
    assert.equal(0, proclaim(A, string.format("%.0f", t2), "x")) -- not the holder
    assert.equal(0, proclaim(B, string.format("%.0f", t1), "x")) -- the holder, a wrong term
    r:call("DEL", LOCK)
    local before = sa.snapshot(r, KEYS)
    assert.equal(0, proclaim(B, string.format("%.0f", t2), "x"))
    sa.assert_unchanged(r, before)
    assert.same({}, r:published())
  end)

  it("refuses the same holder id and term with another secret (another process): 0, nothing changed", function()
    local t = string.format("%.0f", term_of(campaign(A, "a")))
    r:published()
    local before = sa.snapshot(r, KEYS)
    assert.equal(0, proclaim(A, t, "x", "publish", "another-incarnation"))
    sa.assert_unchanged(r, before)
    assert.same({}, r:published())
    r:call("HDEL", STATE, "secret") -- a secret-less record (an older version's leader) proves nothing
    assert.equal(0, proclaim(A, t, "x"))
    assert.equal("a", r:call("HGET", STATE, "value"))
  end)

  it("refuses bad arguments and changes nothing", function()
    local t = string.format("%.0f", term_of(campaign(A, "a")))
    r:published()
    local before = sa.snapshot(r, KEYS)
    for _, c in ipairs({
      { { A, "0", "v", "publish", "s-" .. A }, "RLK_BADARG" },
      { { A, "-1", "v", "publish", "s-" .. A }, "RLK_BADARG" },
      { { A, "1e3", "v", "publish", "s-" .. A }, "RLK_BADARG" },
      { { A, "9007199254740991", "v", "publish", "s-" .. A }, "RLK_BADARG" },
      { { A, t, string.rep("v", 65537), "publish", "s-" .. A }, "RLK_BADARG" },
      { { A, t, "v", "publish" }, "RLK_BADARG" },
      { { A, t, "v", "publish", "" }, "RLK_BADARG" },
      { { A, t, "v", "publish", string.rep("s", 65) }, "RLK_BADARG" },
      { { "", t, "v", "publish", "s-" .. A }, "RLK_BADOWNER" },
    }) do
      sa.assert_error(r:script("elect/proclaim", { LOCK, STATE, CH }, c[1]), c[2])
    end
    r:call("DEL", STATE)
    r:call("SET", STATE, "x")
    sa.assert_error(proclaim(A, t, "v"), "RLK_WRONGTYPE")
    r:call("DEL", STATE)
    sa.assert_unchanged(r, { before[1], before[2] })
  end)

  sa.publish_cases(r, KEYS, function() high_token() campaign(A, "a") end, function(pub)
    return proclaim(A, r:call("HGET", STATE, "term"), "b", pub)
  end, CH)
end)

describe("elect/resign", function()
  it("deletes the lock, wakes waiters, keeps only the term in the record, publishes the change", function()
    local t = string.format("%.0f", term_of(campaign(A, "a")))
    r:published()
    assert.equal(1, resign(A))
    assert.equal(0, r:call("EXISTS", LOCK))
    assert.same({ NIL, t, NIL }, r:call("HMGET", STATE, "value", "term", "holder"))
    assert.equal(t, r:call("GET", TOKEN))
    local p = r:published()
    assert.equal(2, #p)
    assert.same({ LOCK_CH, "0" }, { p[1].channel, p[1].message })
    assert.same({ CH, "resigned " .. t }, { p[2].channel, p[2].message })
  end)

  it("refuses a candidate that does not lead (nil, nothing changed)", function()
    campaign(A, "a")
    r:published()
    local before = sa.snapshot(r, KEYS)
    assert.equal(NIL, resign(B))
    sa.assert_unchanged(r, before)
    assert.same({}, r:published())
  end)

  it("refuses the same holder id with another secret (another process): nil, the leader leads on", function()
    local t = term_of(campaign(A, "a"))
    r:published()
    local before = sa.snapshot(r, KEYS)
    assert.equal(NIL, resign(A, "publish", "another-incarnation"))
    sa.assert_unchanged(r, before)
    assert.same({}, r:published())
    assert.same({ A, t, "a" }, { leader()[1], leader()[2], leader()[3] })
    r:call("HSET", STATE, "holder", B) -- the record names another holder: nil too
    assert.equal(NIL, resign(A))
    assert.equal("1", r:call("HGET", LOCK, A))
  end)

  it("refuses bad arguments and changes nothing", function()
    campaign(A, "a")
    r:published()
    local before = sa.snapshot(r, KEYS)
    local S, K = "s-" .. A, { LOCK, LOCK_CH, STATE, CH }
    sa.assert_error(r:script("elect/resign", K, { "", "1000", "publish", S }), "RLK_BADOWNER")
    sa.assert_error(r:script("elect/resign", K, { A, "0", "publish", S }), "RLK_BADLEASE")
    sa.assert_error(r:script("elect/resign", { LOCK, LOCK_CH, STATE }, { A, "1000", "publish", S }), "RLK_BADARG")
    sa.assert_error(r:script("elect/resign", K, { A, "1000", "publish" }), "RLK_BADARG")
    sa.assert_error(r:script("elect/resign", K, { A, "1000", "publish", "" }), "RLK_BADARG")
    sa.assert_error(r:script("elect/resign", K, { A, "1000", "publish", string.rep("s", 65) }), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)

  sa.publish_cases(r, KEYS, function() high_token() campaign(A, "a") end, function(pub) return resign(A, pub) end,
    { LOCK_CH, CH })
end)

describe("elect/leader", function()
  it("reads nobody, then the leader, then the last term after a resign", function()
    assert.same({ "", 0, "", -2 }, leader())
    local t = term_of(campaign(A, "a"))
    local l = leader()
    assert.same({ A, t, "a" }, { l[1], l[2], l[3] })
    assert.is_true(l[4] > 0 and l[4] <= LEASE)
    resign(A)
    assert.same({ "", t, "", -2 }, leader())
  end)

  it("reads nobody when the recorded leader's lock is gone (its lease ran out)", function()
    local t = term_of(campaign(A, "a"))
    r:call("DEL", LOCK)
    assert.same({ "", t, "", -2 }, leader())
  end)

  it("refuses bad calls", function()
    sa.assert_error(r:script("elect/leader", { LOCK }, {}), "RLK_BADARG")
    sa.assert_error(r:script("elect/leader", { LOCK, STATE }, { "x" }), "RLK_BADARG")
    r:call("SET", STATE, "x")
    sa.assert_error(leader(), "RLK_WRONGTYPE")
  end)
end)

-- The leader's renewal names its term: one holder id may campaign from several processes (a
-- StatefulSet's pod name), and a leader paused past its lease must not renew the leadership
-- the same id won again elsewhere (fenced/renew, which checks only the id, did).
describe("elect/renew", function()
  it("renews the leader's lock in its term: lease reset, token key without a TTL", function()
    local t = term_of(campaign(A, "a", 2000))
    r:call("PEXPIRE", TOKEN, "3600000") -- as version 1 of the fenced scripts left it
    assert.equal(1, renew(A, t, 7200000))
    sa.assert_pttl(r, LOCK, 7200000, 7200000 - sa.TTL_SLACK_MS)
    assert.equal(-1, r:call("PTTL", TOKEN))
    assert.equal("1", r:call("HGET", LOCK, A))
  end)

  it("replies 0 to the old incarnation of the same holder id once it leads in a newer term", function()
    local t1 = term_of(campaign(A, "first", 1000, nil, "s-one"))
    r:call("DEL", LOCK) -- the first's lease ran out (it was paused)
    local t2 = term_of(campaign(A, "second", 1000, nil, "s-two"))
    assert.is_true(t2 > t1)
    r:published()
    local before = sa.snapshot(r, KEYS)
    assert.equal(0, renew(A, t1, 600000))
    sa.assert_unchanged(r, before)
    assert.equal(1, renew(A, t2, 600000))
  end)

  it("replies 0 to another holder, with no lock, and with no token key; changes nothing", function()
    local t = term_of(campaign(A, "a"))
    r:published()
    local before = sa.snapshot(r, KEYS)
    assert.equal(0, renew(B, t))
    sa.assert_unchanged(r, before)
    r:call("DEL", TOKEN)
    before = sa.snapshot(r, KEYS)
    assert.equal(0, renew(A, t))
    sa.assert_unchanged(r, before)
    r:reset()
    assert.equal(0, renew(A, t))
    assert.equal(0, r:call("EXISTS", LOCK, TOKEN))
  end)

  it("refuses bad calls and wrong types, changing nothing", function()
    local t = term_of(campaign(A, "a"))
    local ts = string.format("%.0f", t)
    r:published()
    local before = sa.snapshot(r, KEYS)
    for _, c in ipairs({
      { { "0", A, ts }, "RLK_BADLEASE" },
      { { tostring(LEASE), "", ts }, "RLK_BADOWNER" },
      { { tostring(LEASE), A, "0" }, "RLK_BADARG" },
      { { tostring(LEASE), A, "-1" }, "RLK_BADARG" },
      { { tostring(LEASE), A, "1e3" }, "RLK_BADARG" },
      { { tostring(LEASE), A, "9007199254740991" }, "RLK_BADARG" },
      { { tostring(LEASE), A }, "RLK_BADARG" },
    }) do
      sa.assert_error(r:script("elect/renew", { LOCK, TOKEN }, c[1]), c[2])
    end
    sa.assert_error(r:script("elect/renew", { LOCK }, { tostring(LEASE), A, ts }), "RLK_BADARG")
    sa.assert_unchanged(r, before)
    r:call("SET", TOKEN, "abc")
    sa.assert_error(renew(A, ts), "RLK_WRONGTYPE")
    r:reset()
    r:call("SET", LOCK, "x")
    sa.assert_error(renew(A, "5"), "RLK_WRONGTYPE")
  end)
end)
