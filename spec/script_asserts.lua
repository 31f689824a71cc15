-- SPDX-License-Identifier: BSD-3-Clause
-- Shared assertions for the script specs (reentrant_spec, token_spec). Not a spec itself.
--
--   local sa = require("script_asserts")
--   sa.assert_error(reply, "RLK_BADLEASE")       -- an RLK error reply with that code and a message
--   local before = sa.snapshot(r, {"k1", "k2"})  -- type, content and TTL of each key
--   sa.assert_unchanged(r, before)               -- same content, TTL not reset, nothing published
--   sa.assert_pttl(r, "k", lease)                -- 0 < PTTL <= lease
--   local rep, counts, total = sa.count_commands(r, fn)  -- fn's reply, the commands its scripts ran
local assert = require("luassert")
local backend = require("support.backend")
local replies = require("support.reply")

local M = {}

-- Real Redis runs on a shared machine: TTLs move while the spec runs. A TTL that was reset by a
-- call rises to near its lease; one left alone only falls. This is how much it may fall.
M.TTL_SLACK_MS = 5000

function M.assert_error(reply, code)
  assert.is_table(reply)
  assert.is_string(reply.err, "expected an error reply " .. code)
  assert.matches("^" .. code .. " %S", reply.err)
end

-- Content of a key in a comparable form: hashes as maps, strings as strings, others by type.
local function content(r, key, kind)
  if kind == "hash" then
    local flat, map = r:call("HGETALL", key), {}
    for i = 1, #flat, 2 do map[flat[i]] = flat[i + 1] end
    return map
  elseif kind == "string" then
    return r:call("GET", key)
  elseif kind == "list" then
    return r:call("LRANGE", key, "0", "-1")
  elseif kind == "set" then
    local members = r:call("SMEMBERS", key)
    table.sort(members)
    return members
  elseif kind == "zset" then
    return r:call("ZRANGE", key, "0", "-1", "WITHSCORES")
  elseif kind == "stream" then
    return r:call("XRANGE", key, "-", "+")
  end
  return kind
end

function M.snapshot(r, keys)
  local snap = {}
  for i, key in ipairs(keys) do
    local kind = r:call("TYPE", key).ok
    snap[i] = { key = key, type = kind, content = content(r, key, kind), pttl = r:call("PTTL", key) }
  end
  return snap
end

-- Asserts every key of the snapshot still has its type, content and TTL (a TTL may only have
-- fallen by less than TTL_SLACK_MS; a key without TTL still has none), and that nothing was
-- published since the last r:published() or r:reset().
function M.assert_unchanged(r, before)
  for _, b in ipairs(before) do
    local kind = r:call("TYPE", b.key).ok
    assert.equal(b.type, kind, "type of " .. b.key)
    assert.same(b.content, content(r, b.key, kind), "content of " .. b.key)
    local pttl = r:call("PTTL", b.key)
    if b.pttl < 0 then
      assert.equal(b.pttl, pttl, "TTL of " .. b.key)
    else
      assert.is_true(pttl <= b.pttl and pttl > b.pttl - M.TTL_SLACK_MS,
        string.format("PTTL of %s moved from %d to %d", b.key, b.pttl, pttl))
    end
  end
  assert.same({}, r:published())
end

-- 0 < PTTL <= lease, and (when given) PTTL > floor: e.g. a TTL just set to lease.
function M.assert_pttl(r, key, lease, floor)
  local pttl = r:call("PTTL", key)
  assert.is_number(pttl)
  assert.is_true(pttl > 0 and pttl <= lease, string.format("PTTL of %s is %d, lease %d", key, pttl, lease))
  if floor then
    assert.is_true(pttl > floor, string.format("PTTL of %s is %d, expected above %d", key, pttl, floor))
  end
end

-- Lease arguments every script must refuse with RLK_BADLEASE, and the extremes it must accept.
M.BAD_LEASES = { "0", "-1", "+5", "01", "007", "1.5", "1e3", "0x10", " 1", "1 ", "inf", "nan", "",
                 "1000000000001", "9999999999999", "10000000000000", "99999999999999999999", "abc" }
M.GOOD_LEASES = { "1", "1000000000000" }

-- Wrong-type fixtures: a command that creates a key of another type than hash/string.
M.OTHER_TYPES = {
  list = { "RPUSH", "%s", "a", "b" },
  set = { "SADD", "%s", "a" },
  zset = { "ZADD", "%s", "1", "a" },
}

function M.make(r, spec, key)
  local cmd = {}
  for i, a in ipairs(spec) do cmd[i] = (a:gsub("%%s", key)) end
  r:call(unpack(cmd))
end

-- The publish argument of a script that publishes (scripts/lib/publish_cmd): what must be refused
-- with RLK_BADPUBLISH (Redis would run "PUBLISH", "Publish" as PUBLISH: the rule is exact).
M.BAD_PUBLISH = { "", "PUBLISH", "Publish", "SPUBLISH", " publish", "publish ", "publishx",
                  "set", "del", "eval", "0" }

-- Specs of the publish argument of one script. setup() brings the data to a state where
-- call(publish) publishes on channel (a string, a list of strings when it publishes on several,
-- or a function returning either); keys are the keys a refused call must leave as they were.
function M.publish_cases(r, keys, setup, call, channel)
  local busted = require("busted")
  local function chan() return type(channel) == "function" and channel() or channel end
  busted.describe("its publish argument (last fixed ARGV)", function()
    busted.it("refuses anything but exactly publish or spublish with RLK_BADPUBLISH, changing nothing",
      function()
        for _, bad in ipairs(M.BAD_PUBLISH) do
          r:reset()
          setup()
          r:published()
          local before = M.snapshot(r, keys)
          M.assert_error(call(bad), "RLK_BADPUBLISH")
          M.assert_unchanged(r, before)
        end
      end)
    busted.it("spublish: the same message goes out with SPUBLISH (sharded), publish: with PUBLISH", function()
      local got = {}
      for _, cmd in ipairs({ "publish", "spublish" }) do
        r:reset()
        setup()
        local chans = chan()
        for _, ch in ipairs(type(chans) == "table" and chans or { chans }) do r:ssubscribe(ch) end
        r:published()
        local rep = call(cmd)
        assert.is_false(replies.is_error(rep), "publish " .. cmd .. ": " .. replies.describe(rep))
        got[cmd] = r:published()
      end
      assert.is_true(#got.publish >= 1, "nothing published with publish")
      assert.equal(#got.publish, #got.spublish)
      for i, p in ipairs(got.spublish) do
        assert.is_true(p.sharded, "message " .. i .. " not sharded")
        assert.is_nil(got.publish[i].sharded)
        assert.equal(got.publish[i].channel, p.channel)
        assert.equal(got.publish[i].message, p.message)
      end
    end)
  end)
end

M.NIL = backend.NIL

-- What a script call costs the server, command by command: fn's reply, a table of the commands the
-- scripts it calls ran (lower-case name -> calls) and their total. The mock counts what its scripts
-- call; real Redis reports it in INFO commandstats (reset first; the EVAL/FCALL itself, CONFIG and
-- INFO are left out).
function M.count_commands(r, fn)
  local counts, total = {}, 0
  local rep
  if r.mock then
    local m = r.mock
    m.script_command = function(self, argv, keys)
      local name = argv[1]:lower()
      counts[name], total = (counts[name] or 0) + 1, total + 1
      return getmetatable(self).__index.script_command(self, argv, keys)
    end
    rep = fn()
    m.script_command = nil
  else
    r:call("CONFIG", "RESETSTAT")
    rep = fn()
    for name, n in r:call("INFO", "commandstats"):gmatch("cmdstat_([%w_|]+):calls=(%d+)") do
      if not name:find("|") and name ~= "eval" and name ~= "evalsha" and name ~= "fcall"
          and name ~= "config" and name ~= "info" then
        counts[name], total = tonumber(n), total + tonumber(n)
      end
    end
  end
  return rep, counts, total
end

return M
