-- SPDX-License-Identifier: BSD-3-Clause
-- The Functions library (tools/gen-functions.lua, share/rlk/functions.lua) on the backend
-- RLK_BACKEND picks: it holds every script's bytes unchanged, one function per script; loaded
-- with FUNCTION LOAD (the mock's and a real server's), the same operations give the same replies
-- through FCALL / FCALL_RO as through EVAL. (RLK_CALL=fcall runs every other spec through the
-- library too.)
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local reply = require("support.reply")

local NIL = backend.NIL
local library, gf = backend.library()
local scripts = gf.read_scripts(backend.root .. "/scripts")

describe("the Functions library", function()
  it("starts with #!lua name=rlk and registers rlk_version and one function per script", function()
    assert.equal("#!lua name=rlk\n", library:sub(1, 15))
    local names = {}
    for fn in library:gmatch("\n  function_name = '([%w_]+)',") do names[#names + 1] = fn end
    assert.equal(#scripts + 1, #names)
    assert.equal("rlk_version", names[1])
    for i, s in ipairs(scripts) do assert.equal(gf.function_name(s.name), names[i + 1]) end
  end)

  it("holds each expanded script's bytes unchanged after local KEYS, ARGV = keys, args", function()
    for _, s in ipairs(scripts) do
      local body = s.body:gsub("\n$", "")
      local wrapped = "callback = function(keys, args)\nlocal KEYS, ARGV = keys, args\n" .. body .. "\n  end,"
      assert.truthy(library:find(wrapped, 1, true), s.name .. ": body not found unchanged")
    end
  end)

  it("flags no-writes exactly the scripts whose commands all only read", function()
    local flagged = {}
    for fn in library:gmatch("function_name = '([%w_]+)',\n  flags = { 'no%-writes' },") do
      flagged[#flagged + 1] = fn
    end
    assert.truthy(library:find("function_name = 'rlk_version',\n  callback = function() return { 'rlk', 'spec', '"
      .. gf.scripts_id(scripts) .. "' } end,\n  flags = { 'no-writes' },", 1, true))
    assert.same({ "rlk_elect_leader", "rlk_fastmulti_counts", "rlk_fastmulti_held", "rlk_fenced_held",
                  "rlk_fenced_token", "rlk_latch_count", "rlk_latch_ttl", "rlk_psemaphore_size",
                  "rlk_psemaphore_ttl", "rlk_semaphore_available", "rlk_semaphore_ttl" }, flagged)
    -- The C library's list of scripts that never write (rlk_no_writes_name, which
    -- client/scripts.c reads: no WAIT after them, and they may run on a replica) is generated
    -- with the library from the same bodies: the same set.
    local c_src = gf.c_source(scripts, "spec", library)
    local list = assert(c_src:match("rlk_no_writes_name%[%] = {(.-)NULL"), "rlk_no_writes_name not found")
    local c_flagged = {}
    for name in list:gmatch('"([%w_/]+)"') do c_flagged[#c_flagged + 1] = gf.function_name(name) end
    table.sort(c_flagged)
    assert.same(flagged, c_flagged)
    assert.is_false(gf.no_writes("redis.call('get', k) redis.call('set', k, v)"))
    assert.is_false(gf.no_writes("local c = 'get' redis.call(c, k)"))   -- a name it cannot see
    assert.is_true(gf.no_writes("redis.call('pttl', k) redis.pcall(\"TYPE\", k)"))
  end)

  it("rlk_version replies the scripts id: the SHA-1 of the manifest lines", function()
    local r = backend.new({ call = "fcall" })
    r:load_library()
    local v = r:call("FCALL_RO", "rlk_version", "0")
    assert.same({ "rlk", "spec", gf.scripts_id(scripts) }, v)
    r:close()
  end)
end)

-- The same operations through EVAL and through FCALL: the replies must agree (numbers above 1000,
-- remaining TTLs, within 200 ms, and fenced tokens, microseconds since the epoch, only both above
-- 10^12: a real server's clock moves between the two runs). Claim windows are 30 s, so that a
-- grant made by one step is still there for the next however slowly a busy machine runs them.
local RK = { "L", "{L}:rlk_waiters", "{L}:rlk_next" }
local RREL = { "L", "redisson_lock__channel:{L}", "{L}:rlk_waiters", "{L}:rlk_next" }
local OPS = {
  { "reentrant/acquire", RK, { "30000", "A:1", "0" } },
  { "reentrant/acquire", RK, { "30000", "A:1", "0" } },
  { "reentrant/acquire", RK, { "30000", "B:1", "11" } },    -- queued: the release hands over (2)
  { "reentrant/release", RREL, { "A:1", "30000", "30000", "publish" } },
  { "reentrant/release", RREL, { "A:1", "30000", "30000", "publish" } },
  { "reentrant/cancel", RREL, { "11", "30000", "publish" } },
  { "reentrant/acquire", RK, { "0", "A:1", "0" }, bad = true },
  { "rwlock/read_acquire", { "W", "{W}", "{W}:rlk_next" }, { "30000", "A:1" } },
  { "rwlock/write_acquire", { "W", "{W}:rlk_waiters", "{W}:rlk_next" }, { "30000", "A:1", "0" } },
  { "rwlock/write_acquire", { "W", "{W}:rlk_waiters", "{W}:rlk_next" }, { "30000", "B:1", "11" } },
  { "rwlock/read_release", { "W", "redisson_rwlock:{W}", "{W}", "{W}:rlk_waiters", "{W}:rlk_next" },
    { "A:1", "30000", "publish" } },  -- the last read: reserved for writer 11 (2)
  { "rwlock/cancel", { "W", "redisson_rwlock:{W}", "{W}:rlk_waiters", "{W}:rlk_next" }, { "11", "30000", "publish" } },
  { "fenced/acquire", { "F", "redisson_lock_token:{F}" }, { "30000", "A:1" } },
  { "fenced/token", { "redisson_lock_token:{F}" }, {} },
  { "semaphore/try_set_permits", { "S", "redisson_sc:{S}" }, { "2", "publish" } },
  { "semaphore/try_acquire", { "S" }, { "1" } },
  { "semaphore/available", { "S" }, {} },
  { "latch/try_set_count", { "C", "redisson_countdownlatch__channel__{C}" }, { "2", "publish" } },
  { "latch/count_down", { "C", "redisson_countdownlatch__channel__{C}" }, { "publish" } },
  { "latch/count", { "C" }, {} },
  { "token/acquire", { "T" }, { "tok", "30000" } },
  { "token/release", { "T" }, { "tok" } },
  { "reentrant/acquire", { "L", "x" }, { "30000", "A:1" }, bad = true },
}

local function run_all(call)
  local r = backend.new({ call = call })
  r:call("FLUSHDB")
  local out = {}
  for i, op in ipairs(OPS) do out[i] = r:script(op[1], op[2], op[3]) end
  r:call("FLUSHDB")
  r:close()
  return out
end

local function same(a, b)
  if type(a) == "number" and type(b) == "number" and a > 1e12 then return b > 1e12 end
  if type(a) == "number" and type(b) == "number" and a > 1000 then return math.abs(a - b) <= 200 end
  if type(a) == "table" and type(b) == "table" and not reply.is_error(a) then
    if #a ~= #b then return false end
    for i = 1, #a do if not same(a[i], b[i]) then return false end end
    return true
  end
  return reply.same(a, b)
end

describe("FCALL and EVAL", function()
  it("give the same replies for the same operations", function()
    local by_eval, by_fcall = run_all("eval"), run_all("fcall")
    assert.equal(#OPS, #by_fcall)
    for i, op in ipairs(OPS) do
      assert.is_true(same(by_eval[i], by_fcall[i]), op[1] .. " (step " .. i .. "): EVAL "
        .. reply.describe(by_eval[i]) .. ", FCALL " .. reply.describe(by_fcall[i]))
    end
    for i = 1, #OPS do          -- the steps not marked bad really ran, the others were refused
      local r = by_fcall[i]
      local code = type(r) == "table" and reply.is_error(r) and reply.error_code(r.err)
      assert.equal(OPS[i].bad == true, code and code:match("^RLK_BAD") ~= nil, OPS[i][1]
        .. " (step " .. i .. "): " .. reply.describe(r))
    end
    assert.equal(NIL, by_fcall[1])
    assert.equal("RLK_BADARG", reply.error_code(by_fcall[#OPS].err))
  end)
end)
