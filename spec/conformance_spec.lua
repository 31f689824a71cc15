-- SPDX-License-Identifier: BSD-3-Clause
-- Conformance: every case of spec/conformance/cases.lua runs on a fresh mock
-- and on a real redis-server (FLUSHDB first); the replies of every step
-- must agree (support.reply.same: errors by first word, or by a declared
-- prefix, or exactly; numbers within a declared tolerance).
--
-- Needs a server: RLK_REDIS_PORT (127.0.0.1) or RLK_REDIS_SOCKET. Without
-- one the suite fails; run `busted --exclude-pattern=conformance` for the
-- mock-only specs. LuaJIT only (the real backend uses the FFI).
--
-- A case: { name =, setup = {steps}, cmd = argv | script = src, keys =,
-- args =, steps = {steps}, error = true (the cmd/script step, or else the
-- last step, must reply an error; any other step must not),
-- published = true (compare what was PUBLISHed or SPUBLISHed), ssubscribe = {channels} (the
-- backends' subscribers SSUBSCRIBE them first), and comparison options
-- err_prefix = "...", err_exact = true, tolerance = n, sort = true,
-- sort_pairs = true }. A step is an argv array, or { script = src, keys =,
-- args = }; a step may carry its own options and `error = true`.

local backend = require("support.backend")
local reply = require("support.reply")
local cases = require("conformance.cases")

local OPTION_NAMES = { "err_prefix", "err_exact", "tolerance", "sort", "sort_pairs" }

-- The steps of a case in order, and the index of its main step (the cmd or
-- script, else the last step).
local function steps_of(case)
  local steps = {}
  for _, s in ipairs(case.setup or {}) do steps[#steps + 1] = s end
  if case.cmd then steps[#steps + 1] = case.cmd end
  if case.script then
    steps[#steps + 1] = { script = case.script, keys = case.keys, args = case.args }
  end
  local main = #steps
  for _, s in ipairs(case.steps or {}) do steps[#steps + 1] = s end
  if not (case.cmd or case.script) then main = #steps end
  return steps, main
end

local function options_for(case, step)
  local o = {}
  for _, name in ipairs(OPTION_NAMES) do
    if step[name] ~= nil then o[name] = step[name] else o[name] = case[name] end
  end
  return o
end

local function argv_of(step)
  local argv = {}
  for i = 1, #step do argv[i] = step[i] end
  return argv
end

local function run_step(r, step)
  if step.script then return r:eval(step.script, step.keys or {}, step.args or {}) end
  return r:command(argv_of(step))
end

local function normalise(v, o)
  if o.sort then return reply.sorted(v) end
  if o.sort_pairs then return reply.sorted_pairs(v) end
  return v
end

local function label(step)
  if step.script then return "script " .. string.format("%q", step.script) end
  return table.concat(argv_of(step), " ")
end

local function compare(case, step, i, mine, theirs)
  local o = options_for(case, step)
  local a, b = normalise(mine, o), normalise(theirs, o)
  local ok, why
  if o.err_exact and (reply.is_error(a) or reply.is_error(b)) then
    ok = reply.is_error(a) and reply.is_error(b) and a.err == b.err
    why = "errors differ"
  else
    ok, why = reply.same(a, b, o)
  end
  if not ok then
    error(string.format("step %d (%s): mock and redis disagree: %s\n  mock:  %s\n  redis: %s",
      i, label(step), tostring(why), reply.describe(a), reply.describe(b)), 0)
  end
end

local function check_kind(step, i, is_main, case, theirs)
  local want_error = step.error or (is_main and case.error)
  if want_error and not reply.is_error(theirs) then
    error(string.format("step %d (%s): expected an error reply, redis gave %s",
      i, label(step), reply.describe(theirs)), 0)
  end
  if not want_error and reply.is_error(theirs) then
    error(string.format("step %d (%s): unexpected error reply %s (mark the step error = true)",
      i, label(step), reply.describe(theirs)), 0)
  end
end

local function same_publications(mine, theirs)
  if #mine ~= #theirs then return false end
  for i = 1, #mine do
    if mine[i].channel ~= theirs[i].channel or mine[i].message ~= theirs[i].message
      or (mine[i].sharded or false) ~= (theirs[i].sharded or false) then
      return false
    end
  end
  return true
end

local function describe_publications(list)
  local out = {}
  for _, p in ipairs(list) do
    out[#out + 1] = (p.sharded and "(sharded) " or "") .. p.channel .. "=" .. p.message
  end
  return "[" .. table.concat(out, ", ") .. "]"
end

-- known: the case's entry of spec/conformance/valkey.lua on Valkey, else nil.
local function run_case(case, redis, known)
  local mock = backend.new({ backend = "mock" })
  redis:reset()
  for _, ch in ipairs(case.ssubscribe or {}) do
    mock:ssubscribe(ch)
    redis:ssubscribe(ch)
  end
  local steps, main = steps_of(case)
  assert(#steps > 0, "case has no steps")
  for i, step in ipairs(steps) do
    local mine = run_step(mock, step)
    local theirs = run_step(redis, step)
    if known and known[i] ~= nil then
      -- A documented Valkey difference: Valkey's reply exactly, and still a difference.
      local ok, why = reply.same(theirs, known[i], { err_exact = true })
      if not ok or (reply.is_error(theirs) and theirs.err ~= known[i].err) then
        error(string.format("step %d (%s): Valkey's reply is not the one spec/conformance/valkey.lua "
          .. "lists: %s\n  listed: %s\n  valkey: %s", i, label(step), tostring(why or "errors differ"),
          reply.describe(known[i]), reply.describe(theirs)), 0)
      end
      local o = options_for(case, step)
      local same_as_mock = reply.same(normalise(mine, o), normalise(theirs, o), o)
      if reply.is_error(mine) and reply.is_error(theirs) then same_as_mock = mine.err == theirs.err end
      if same_as_mock then
        error(string.format("step %d (%s): spec/conformance/valkey.lua lists a difference, but the "
          .. "mock now replies the same (%s): remove the entry", i, label(step), reply.describe(mine)), 0)
      end
    else
      check_kind(step, i, i == main, case, theirs)
      compare(case, step, i, mine, theirs)
    end
  end
  if case.published then
    local mine, theirs = mock:published(), redis:published()
    if not same_publications(mine, theirs) then
      error("published messages differ:\n  mock:  " .. describe_publications(mine)
        .. "\n  redis: " .. describe_publications(theirs), 0)
    end
    assert(#theirs > 0, "case declares published = true but nothing was published")
  end
end

local function has_server()
  local s, p = os.getenv("RLK_REDIS_SOCKET"), os.getenv("RLK_REDIS_PORT")
  return (s ~= nil and s ~= "") or (p ~= nil and p ~= "")
end

describe("conformance of the mock with redis-server", function()
  if not has_server() then
    it("needs a real redis-server", function()
      error("the conformance suite needs a real redis-server: set RLK_REDIS_PORT "
        .. "(127.0.0.1) or RLK_REDIS_SOCKET; for the mock-only specs run "
        .. "busted --exclude-pattern=conformance", 0)
    end)
    return
  end

  local redis = backend.new({ backend = "redis" })
  local info = redis:call("INFO", "server")
  local version = info:match("redis_version:([%d%.]+)")
  local valkey = info:match("valkey_version:([%d%.]+)")
  print(string.format("conformance: %d cases against %s", #cases,
    valkey and ("valkey-server " .. valkey) or ("redis-server " .. tostring(version))))

  -- Valkey (RLK_TEST_SERVER=valkey): the differences spec/conformance/valkey.lua lists.
  local known = {}
  if valkey then
    it("runs against Valkey 8.0 (its differences from Redis 7.0 listed)", function()
      assert.is_truthy(valkey:match("^8%.0%."),
        "spec/conformance/valkey.lua lists Valkey 8.0's differences; this server is " .. valkey)
    end)
    known = require("conformance.valkey")
    it("names every listed Valkey difference in docs/valkey.md", function()
      local f = assert(io.open(backend.root .. "/docs/valkey.md", "r"))
      local doc = f:read("*a")
      f:close()
      local names = {}
      for name in pairs(known) do names[#names + 1] = name end
      table.sort(names)
      for _, name in ipairs(names) do
        assert(doc:find(name, 1, true), "docs/valkey.md does not name the conformance case \""
          .. name .. "\" (spec/conformance/valkey.lua)")
      end
    end)
  else
    it("runs against Redis 7.0 (the mock's reference)", function()
      assert.is_truthy(version and version:match("^7%.0%."),
        "the mock models Redis 7.0; this server is " .. tostring(version))
    end)
  end

  local seen = {}
  for _, case in ipairs(cases) do
    assert(type(case.name) == "string", "every case needs a name")
    assert(not seen[case.name], "duplicate case name: " .. case.name)
    seen[case.name] = true
    it(case.name, function() run_case(case, redis, known[case.name]) end)
  end
  for name in pairs(known) do
    assert(seen[name], "spec/conformance/valkey.lua names no conformance case: " .. name)
  end

  teardown(function() redis:close() end)
end)
