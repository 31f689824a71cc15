-- SPDX-License-Identifier: BSD-3-Clause
-- The election's record {name}:elect on keys rlk does not own: elect/campaign writes a new term's
-- record only over nothing or an election record (lib/elect_shape: a hash of term, an integer,
-- and value, holder, secret, nothing else); an application's hash there is RLK_WRONGTYPE naming
-- what was found, every key left as it was (no lock taken, no term minted, nothing published).
-- elect/proclaim and elect/resign by the leader whose lock key or record was replaced by an
-- application's key change nothing.
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local sa = require("script_asserts")

local LOCK, TOKEN, STATE = "orders", "redisson_lock_token:{orders}", "{orders}:elect"
local LOCK_CH, CH = "redisson_lock__channel:{orders}", "rlk_elect__channel:{orders}"
local A = "5f0c-uuid-a:1"
local LEASE = 30000
local NIL = backend.NIL

local r = backend.new()

local function campaign(owner)
  return r:script("elect/campaign", { LOCK, TOKEN, STATE, CH },
    { tostring(LEASE), owner, "v", "publish", "s-" .. owner })
end
local function proclaim(owner, term)
  return r:script("elect/proclaim", { LOCK, STATE, CH },
    { owner, term, "v2", "publish", "s-" .. owner })
end
local function resign(owner)
  return r:script("elect/resign", { LOCK, LOCK_CH, STATE, CH },
    { owner, tostring(LEASE), "publish", "s-" .. owner })
end

local KEYS = { LOCK, TOKEN, STATE }

-- Applications' hashes that are not election records.
local HASHES = {
  { "HSET", "%s", "name", "bob", "email", "bob@example.com" },
  { "HSET", "%s", "apples", "3", "pears", "5" },
  { "HSET", "%s", "value", "x" },                                   -- no term
  { "HSET", "%s", "term", "soon", "value", "x" },                   -- a term that is no integer
  { "HSET", "%s", "term", "12", "value", "x", "owner", "bob" },     -- a field records have not
  { "HSET", "%s", A, "1" },                                         -- a lock's hash
}

before_each(function() r:reset() end)

describe("elect/campaign with an application's key at the record", function()
  it("refuses a hash that is not an election record and leaves every key as it was", function()
    for _, spec in ipairs(HASHES) do
      r:reset()
      sa.make(r, spec, STATE)
      r:call("PEXPIRE", STATE, "60000")
      local before = sa.snapshot(r, KEYS)
      r:published()
      local reply = campaign(A)
      sa.assert_error(reply, "RLK_WRONGTYPE")
      assert.is_truthy(reply.err:find("not an election record", 1, true), reply.err)
      sa.assert_unchanged(r, before)
    end
  end)

  it("refuses a key of another type, naming it", function()
    for _, kind in ipairs({ "list", "set", "zset" }) do
      r:reset()
      sa.make(r, sa.OTHER_TYPES[kind], STATE)
      local before = sa.snapshot(r, KEYS)
      local reply = campaign(A)
      sa.assert_error(reply, "RLK_WRONGTYPE")
      assert.is_truthy(reply.err:find("holds a " .. kind, 1, true), reply.err)
      sa.assert_unchanged(r, before)
    end
  end)

  it("takes over an election record: a full one, and a resigned one (its term alone)", function()
    r:call("HSET", STATE, "term", "7", "value", "old", "holder", "gone:1", "secret", "s")
    assert.is_table(campaign(A))
    assert.equal(A, r:call("HGET", STATE, "holder"))
    r:reset()
    r:call("HSET", STATE, "term", "7")
    assert.is_table(campaign(A))
    assert.equal("v", r:call("HGET", STATE, "value"))
  end)
end)

describe("the leader's calls with its keys replaced by an application's", function()
  local function leading()
    local reply = campaign(A)
    assert.is_table(reply)
    return string.format("%.0f", reply[1])
  end

  it("proclaim and resign leave an application's key at the lock name as it was", function()
    local term = leading()
    r:call("DEL", LOCK)
    r:call("HSET", LOCK, "name", "bob")
    local before = sa.snapshot(r, KEYS)
    r:published()
    assert.equal(0, proclaim(A, term))
    assert.equal(NIL, resign(A))
    sa.assert_unchanged(r, before)
  end)

  it("proclaim and resign leave an application's hash at the record as it was", function()
    local term = leading()
    r:call("DEL", STATE)
    r:call("HSET", STATE, "apples", "3")
    local before = sa.snapshot(r, KEYS)
    r:published()
    assert.equal(0, proclaim(A, term))
    assert.equal(NIL, resign(A))
    sa.assert_unchanged(r, before)
  end)
end)
