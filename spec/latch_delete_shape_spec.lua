-- SPDX-License-Identifier: BSD-3-Clause
-- latch/delete on keys rlk does not own: it deletes only a latch count (lib/load_latch_count's
-- shape: a string holding an integer in +-(2^53-1)); an application's string (JSON, text, a
-- number with a sign or a fraction) or a key of another type is RLK_WRONGTYPE saying what was
-- found, the key left as it was (value and TTL), nothing published.
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local sa = require("script_asserts")

local LATCH, CHANNEL = "{cfg}", "redisson_countdownlatch__channel__{cfg}"

local r = backend.new()

local function delete() return r:script("latch/delete", { LATCH, CHANNEL }, { "publish" }) end

-- Refused: RLK_WRONGTYPE whose message contains `found`; the key as it was, nothing published.
local function assert_refused(found)
  r:published()
  local before = sa.snapshot(r, { LATCH })
  local reply = delete()
  sa.assert_error(reply, "RLK_WRONGTYPE")
  assert.is_truthy(reply.err:find(found, 1, true), "the error names what it found: " .. reply.err)
  sa.assert_unchanged(r, before)
end

before_each(function() r:reset() end)

describe("latch/delete on a key that is not a latch", function()
  it("refuses an application's JSON string and leaves it byte for byte", function()
    r:call("SET", LATCH, '{"feature":"on","rollout":25}')
    assert_refused("string that is not an integer count")
    assert.equal('{"feature":"on","rollout":25}', r:call("GET", LATCH))
  end)

  it("refuses every string that is not an integer count", function()
    for _, v in ipairs({ "abc", "", "1.5", "01", "+1", "-0", " 1", "1 ", "9007199254740992",
                         "99999999999999999999" }) do
      r:call("SET", LATCH, v)
      assert_refused("string that is not an integer count")
    end
  end)

  it("keeps the TTL of a string it refuses", function()
    r:call("SET", LATCH, "session-token", "PX", "60000")
    assert_refused("string that is not an integer count")
    assert.is_true(r:call("PTTL", LATCH) > 0)
  end)

  it("names the type of a key that is not a string", function()
    sa.make(r, { "HSET", "%s", "f", "1" }, LATCH)
    assert_refused("holds a hash")
    for _, kind in ipairs({ "list", "set", "zset" }) do
      r:call("DEL", LATCH)
      sa.make(r, sa.OTHER_TYPES[kind], LATCH)
      assert_refused("holds a " .. kind)
    end
  end)
end)

describe("latch/delete on a latch count", function()
  it("deletes any integer count (0 or below too: a latch someone else wrote) and publishes 0", function()
    for _, v in ipairs({ "3", "1", "0", "-2", "9007199254740991", "-9007199254740991" }) do
      r:call("SET", LATCH, v)
      r:published()
      assert.equal(1, delete())
      assert.equal(0, r:call("EXISTS", LATCH))
      assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
    end
  end)
end)
