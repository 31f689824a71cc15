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
--
-- The mock's reference is Redis 7.0. On every other server of the matrix
-- (docs/servers.md) the steps where that server replies otherwise are listed
-- with its exact reply in a table of its own (SERVERS below): those steps are
-- checked against the table, the rest against the mock.
-- RLK_CONFORMANCE_RECORD=FILE writes the table this server would need (every
-- step where it differs from the mock, with its reply) to FILE instead of
-- failing on those steps: a start for a new server's table, to be read and
-- explained by hand (every entry needs its comment).

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

-- Lua source of a canonical reply (for RLK_CONFORMANCE_RECORD).
local function lua_literal(v)
  if v == reply.NIL then return "NIL" end
  if type(v) == "number" then return string.format("%.17g", v) end
  if type(v) == "string" then return string.format("%q", v) end
  if reply.is_error(v) then return "{ err = " .. string.format("%q", v.err) .. " }" end
  if reply.is_status(v) then return "{ ok = " .. string.format("%q", v.ok) .. " }" end
  local out = {}
  for i = 1, #v do out[i] = lua_literal(v[i]) end
  return "{ " .. table.concat(out, ", ") .. " }"
end

-- known: the case's entry of this server's table (SERVERS), else nil; table: its file's name.
-- record: when set, a table that collects the steps where the server differs from the mock.
-- error_form: the server table's _error_form (a rule that turns the mock's text of an error
-- into the server's, for a difference that every error of a kind shares), else nil; rewrites
-- counts the errors where the rule was needed (the server gave the rewritten text).
local function run_case(case, redis, known, table_name, record, error_form, rewrites)
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
    if error_form and reply.is_error(mine) then
      local form = error_form(mine.err)
      if form ~= mine.err then
        if reply.is_error(theirs) and theirs.err == form then rewrites.n = rewrites.n + 1 end
        mine = { err = form }
      end
    end
    if known and known[i] ~= nil then
      -- A documented Valkey difference: Valkey's reply exactly, and still a difference.
      local ok, why = reply.same(theirs, known[i], { err_exact = true })
      if not ok or (reply.is_error(theirs) and theirs.err ~= known[i].err) then
        if not record then
          error(string.format("step %d (%s): the server's reply is not the one %s "
            .. "lists: %s\n  listed: %s\n  server: %s", i, label(step), table_name,
            tostring(why or "errors differ"), reply.describe(known[i]), reply.describe(theirs)), 0)
        end
      end
      local o = options_for(case, step)
      local same_as_mock = reply.same(normalise(mine, o), normalise(theirs, o), o)
      if reply.is_error(mine) and reply.is_error(theirs) then same_as_mock = mine.err == theirs.err end
      if same_as_mock and not record then
        error(string.format("step %d (%s): %s lists a difference, but the "
          .. "mock now replies the same (%s): remove the entry", i, label(step), table_name,
          reply.describe(mine)), 0)
      end
      if record and not same_as_mock then record[#record + 1] = { i, theirs } end
    elseif record then
      local ok = pcall(function()
        check_kind(step, i, i == main, case, theirs)
        compare(case, step, i, mine, theirs)
      end)
      if not ok then record[#record + 1] = { i, theirs } end
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

  -- The servers of the matrix: family and major.minor -> the table of its differences from
  -- Redis 7.0 (the mock's reference) and the heading of docs/servers.md that explains them.
  local SERVERS = {
    ["redis 7.0"] = { name = "Redis 7.0" },
    ["valkey 8.0"] = { name = "Valkey 8.0", table = "conformance.valkey8" },
    ["redis 8.0"] = { name = "Redis 8.0", table = "conformance.redis8" },
    ["valkey 9.1"] = { name = "Valkey 9.1", table = "conformance.valkey9" },
  }
  local family = valkey and "valkey" or "redis"
  local full = valkey or version or "?"
  local server = SERVERS[family .. " " .. (full:match("^(%d+%.%d+)") or full)]
  local record_file = os.getenv("RLK_CONFORMANCE_RECORD")
  if record_file == "" then record_file = nil end
  local known, table_file = {}, nil
  it("runs against a server of the matrix (docs/servers.md)", function()
    assert.is_truthy(server, "no table of differences for " .. family .. " " .. full
      .. ": the matrix has Redis 7.0 (the mock's reference), Redis 8.0, Valkey 8.0 and Valkey 9.1 "
      .. "(spec/conformance/*.lua; RLK_CONFORMANCE_RECORD=FILE writes a start for a new one)")
  end)
  local error_form, rewrites = nil, { n = 0 }
  if server and server.table and record_file then
    -- Recording: the table's error rule applies (the steps it covers are not recorded).
    local ok, t = pcall(require, server.table)
    if ok then error_form = t._error_form end
  end
  if server and server.table and not record_file then
    table_file = "spec/" .. server.table:gsub("%.", "/") .. ".lua"
    known = require(server.table)
    error_form = known._error_form
    it("names every listed difference in docs/servers.md under " .. server.name, function()
      local f = assert(io.open(backend.root .. "/docs/servers.md", "r"))
      local doc = f:read("*a")
      f:close()
      -- The section: from the heading "### Conformance: <server>" to the next heading.
      local head = "\n### Conformance: " .. server.name .. "\n"
      local at = doc:find(head, 1, true)
      assert(at, "docs/servers.md has no heading \"### Conformance: " .. server.name .. "\"")
      local stop = doc:find("\n#", at + #head, true) or #doc
      local section = doc:sub(at, stop)
      local names = {}
      for name in pairs(known) do
        if name:sub(1, 1) ~= "_" then names[#names + 1] = name end
      end
      if error_form then names[#names + 1] = "_error_form" end
      table.sort(names)
      for _, name in ipairs(names) do
        assert(section:find(name, 1, true), "docs/servers.md (Conformance: " .. server.name
          .. ") does not name the case \"" .. name .. "\" (" .. table_file .. ")")
      end
    end)
  end
  local recorded = record_file and {} or nil

  local seen = {}
  for _, case in ipairs(cases) do
    assert(type(case.name) == "string", "every case needs a name")
    assert(not seen[case.name], "duplicate case name: " .. case.name)
    seen[case.name] = true
    it(case.name, function()
      local record = recorded and {} or nil
      run_case(case, redis, known[case.name], table_file, record, error_form, rewrites)
      if record and #record > 0 then recorded[#recorded + 1] = { case.name, record } end
    end)
  end
  for name in pairs(known) do
    assert(name:sub(1, 1) == "_" or seen[name], table_file .. " names no conformance case: " .. name)
  end
  if error_form and not record_file then
    it("the error rule of " .. table_file .. " (_error_form) is still needed", function()
      assert(rewrites.n > 0, table_file .. "'s _error_form rewrote no error the server then gave: remove it")
    end)
  end

  teardown(function()
    redis:close()
    if recorded then
      local out = { "-- " .. family .. " " .. full
        .. ": the steps where it differs from the mock (RLK_CONFORMANCE_RECORD)", "return {" }
      for _, c in ipairs(recorded) do
        local steps = {}
        for _, st in ipairs(c[2]) do steps[#steps + 1] = "[" .. st[1] .. "] = " .. lua_literal(st[2]) end
        out[#out + 1] = "  -- (explain)"
        out[#out + 1] = "  [" .. string.format("%q", c[1]) .. "] = { " .. table.concat(steps, ", ") .. " },"
      end
      out[#out + 1] = "}"
      local f = assert(io.open(record_file, "w"))
      f:write(table.concat(out, "\n"), "\n")
      f:close()
      print("conformance: " .. #recorded .. " cases differ; their table is in " .. record_file)
    end
  end)
end)
