-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of tools/check-headers.lua and its module tools/script_header.lua: every rule of the
-- Header section of docs/script-contract.md fires on a fixture that breaks it.
package.path = "tools/?.lua;" .. package.path
local sh = require("script_header")
local expand = require("expand")

-- A header and body that satisfy every rule; fixtures are edits of it.
local GOOD = {
  "-- name: demo/op",                            -- 1
  "-- version: 1",                               -- 2
  "-- summary: A demo script.",                  -- 3
  "-- redisson: none",                           -- 4
  "-- time: none",                               -- 5
  "-- KEYS[1]: lock - the lock key",             -- 6
  "-- ARGV[1]: lease_ms - lease in ms",          -- 7
  "-- return nil: done",                         -- 8
  "-- return integer: the ttl",                  -- 9
  "-- error RLK_BADARG: wrong argument count",   -- 10
  "-- end",                                      -- 11
  "if #KEYS ~= 1 or #ARGV ~= 1 then",            -- 12
  "  return redis.error_reply('RLK_BADARG expected 1 key and 1 argument')",
  "end",
  "return redis.call('pexpire', KEYS[1], ARGV[1])",
}

local function source(lines) return table.concat(lines, "\n") .. "\n" end

-- edit{ [n] = "text" } replaces line n, [n] = false removes it; insert = { [n] = {...} } puts lines
-- before line n (n = #GOOD + 1 appends).
local function edit(changes, insert)
  local out = {}
  for n = 1, #GOOD + 1 do
    for _, l in ipairs((insert or {})[n] or {}) do out[#out + 1] = l end
    local v = changes[n]
    if v == nil then v = GOOD[n] end
    if v then out[#out + 1] = v end
  end
  return source(out)
end

local function problems_of(src, name)
  return sh.check(src, name == nil and "demo/op" or name)
end

-- Asserts that one problem's message contains text (plain) and, when given, sits on line.
local function assert_problem(problems, text, line)
  for _, p in ipairs(problems) do
    if p.message:find(text, 1, true) and (line == nil or p.line == line) then return end
  end
  local got = {}
  for _, p in ipairs(problems) do got[#got + 1] = p.line .. ": " .. p.message end
  error(string.format("no problem %q%s among:\n  %s", text, line and (" on line " .. line) or "",
    table.concat(got, "\n  ")), 2)
end

describe("script_header.check #tool", function()
  it("accepts the good fixture", function()
    assert.same({}, problems_of(source(GOOD)))
  end)

  it("accepts every shipped script", function()
    for _, name in ipairs({ "reentrant/acquire", "reentrant/release", "reentrant/renew",
                            "reentrant/renew_many", "reentrant/force_release",
                            "token/acquire", "token/release", "token/extend" }) do
      local src = assert(expand.file("scripts/" .. name .. ".lua", "scripts"))
      assert.same({}, sh.check(src, name), name)
    end
  end)

  describe("header block", function()
    it("must start on line 1", function()
      assert_problem(problems_of(edit({}, { [1] = { "" } })), "must start with the header", 1)
      assert_problem(problems_of(edit({}, { [1] = { "#!/usr/bin/env lua" } })), "must start with the header", 1)
    end)

    it("must be closed by '-- end' before the code", function()
      assert_problem(problems_of(edit({ [11] = false })), "header not closed", 11)
      assert_problem(problems_of(edit({ [6] = "" })), "header not closed", 6)
    end)

    it("must be closed at all", function()
      local lines = {}
      for n = 1, 10 do lines[n] = GOOD[n] end
      assert_problem(problems_of(source(lines)), "no line '-- end'", 10)
    end)

    it("wants the end line exactly", function()
      assert_problem(problems_of(edit({ [11] = "-- end of header" })), "exactly '-- end'", 11)
    end)

    it("rejects an empty file", function()
      assert_problem(problems_of(""), "header is missing", 1)
    end)

    it("rejects unknown fields and lines that are no field", function()
      assert_problem(problems_of(edit({}, { [6] = { "-- author: me" } })), "unknown header field 'author'", 6)
      assert_problem(problems_of(edit({}, { [6] = { "-- some prose" } })), "not a header field", 6)
      assert_problem(problems_of(edit({ [3] = "--summary: no space" })), "header not closed", 3)
    end)
  end)

  describe("fields", function()
    for n, field in ipairs({ "name", "version", "summary", "redisson", "time" }) do
      it("reports a missing '" .. field .. "'", function()
        assert_problem(problems_of(edit({ [n] = false }), false), "missing field '" .. field .. "'")
      end)
    end

    it("reports a missing return", function()
      assert_problem(problems_of(edit({ [8] = false, [9] = false })), "missing field 'return'")
    end)

    it("reports fields out of order", function()
      assert_problem(problems_of(edit({ [2] = GOOD[3], [3] = GOOD[2] })), "'version' out of order", 3)
      assert_problem(problems_of(edit({ [6] = GOOD[7], [7] = GOOD[6] })), "'KEYS' out of order", 7)
      assert_problem(problems_of(edit({ [9] = GOOD[10], [10] = GOOD[9] })), "'return' out of order", 10)
      assert_problem(problems_of(edit({ [1] = GOOD[2], [2] = GOOD[1] })), "'name' out of order", 2)
    end)

    it("reports a duplicate field", function()
      assert_problem(problems_of(edit({}, { [3] = { "-- version: 2" } })), "duplicate field 'version'", 3)
    end)

    it("reports an empty value", function()
      assert_problem(problems_of(edit({ [3] = "-- summary: " })), "field 'summary' is empty", 3)
      assert_problem(problems_of(edit({ [4] = "-- redisson:  " })), "field 'redisson' is empty", 4)
    end)

    it("wants the name derived from the path", function()
      assert_problem(problems_of(source(GOOD), "demo/other"), "does not match the path-derived name 'demo/other'", 1)
    end)

    it("wants a positive integer version", function()
      for _, v in ipairs({ "0", "01", "1.5", "x", "-1" }) do
        assert_problem(problems_of(edit({ [2] = "-- version: " .. v })), "version must be a positive integer", 2)
      end
    end)

    it("wants time 'none' or 'server - <why>'", function()
      assert_problem(problems_of(edit({ [5] = "-- time: sometimes" })), "time must be 'none' or 'server", 5)
      assert_problem(problems_of(edit({ [5] = "-- time: server" })), "time must be 'none' or 'server", 5)
    end)
  end)

  describe("KEYS and ARGV lines", function()
    it("are numbered from 1 without gaps", function()
      assert_problem(problems_of(edit({ [6] = "-- KEYS[2]: lock - the lock key" })),
        "KEYS[2] out of sequence: expected KEYS[1]", 6)
      assert_problem(problems_of(edit({}, { [7] = { "-- KEYS[3]: other - another key" } })),
        "KEYS[3] out of sequence: expected KEYS[2]", 7)
      assert_problem(problems_of(edit({}, { [8] = { "-- ARGV[1]: again - duplicate index" } })),
        "ARGV[1] out of sequence: expected ARGV[2]", 8)
    end)

    it("read '<short name> - meaning'", function()
      assert_problem(problems_of(edit({ [6] = "-- KEYS[1]: the lock key" })), "must read '<short name> - <meaning>'", 6)
      assert_problem(problems_of(edit({ [7] = "-- ARGV[1]: lease_ms -" })), "must read '<short name> - <meaning>'", 7)
    end)

    it("write a variadic tail as the last line of its kind, starting at the next index", function()
      local tail_first = edit({}, { [7] = { "-- KEYS[2..n]: more - more keys", "-- KEYS[2]: late - after the tail" } })
      assert_problem(problems_of(tail_first), "KEYS[2..n] must be the last KEYS line", 8)
      assert_problem(problems_of(edit({}, { [8] = { "-- ARGV[3..n]: rest - a gap before the tail" } })),
        "ARGV[3] out of sequence: expected ARGV[2]", 8)
      assert_problem(problems_of(edit({ [6] = "-- KEYS[1..m]: lock - bad tail" })), "bad index", 6)
    end)

    it("must match the indexes the code uses", function()
      local extra_key = edit({ [15] = "return redis.call('pexpire', KEYS[1], ARGV[1]) .. KEYS[2]" })
      assert_problem(problems_of(extra_key), "code uses KEYS[2] but the header does not declare it", 15)
      local unused = edit({}, { [8] = { "-- ARGV[2]: owner - never used" } })
      assert_problem(problems_of(unused), "header declares ARGV[2] but the code never uses it", 8)
      local dynamic = edit({ [15] = "local i = 1 return redis.call('pexpire', KEYS[i], ARGV[1])" })
      assert_problem(problems_of(dynamic), "code indexes KEYS with a non-constant", 15)
      local whole = edit({ [15] = "return redis.call('del', unpack(KEYS)) .. KEYS[1] .. ARGV[1]" })
      assert_problem(problems_of(whole), "code indexes KEYS with a non-constant", 15)
    end)

    it("accept a variadic tail used by a computed index, and reject one never used", function()
      local tail = edit({ [6] = "-- KEYS[1..n]: locks - the lock keys",
                          [15] = "for i = 1, #KEYS do redis.call('pexpire', KEYS[i], ARGV[1]) end" })
      assert.same({}, problems_of(tail))
      local literal_in_tail = edit({ [6] = "-- KEYS[1..n]: locks - the lock keys" })
      assert.same({}, problems_of(literal_in_tail))
      local unused_tail = edit({}, { [8] = { "-- ARGV[2..n]: owners - never used" } })
      assert_problem(problems_of(unused_tail), "header declares ARGV[2..n] but the code never uses it", 8)
    end)

    it("ignore comments and count #KEYS as no use", function()
      local commented = edit({ [15] = "return redis.call('pexpire', KEYS[1], ARGV[1]) -- KEYS[7] ARGV[i]",
                               [14] = "end --[[ ARGV[9]\n RLK_OTHER ]]" })
      assert.same({}, problems_of(commented))
    end)
  end)

  describe("return and error lines", function()
    it("use the known shapes or a literal integer", function()
      assert_problem(problems_of(edit({ [9] = "-- return number: the ttl" })), "unknown return shape 'number'", 9)
      assert.same({}, problems_of(edit({ [9] = "-- return -1: no ttl" })))
      assert_problem(problems_of(edit({ [9] = "-- return nil: again" })), "duplicate return 'nil'", 9)
    end)

    it("name RLK_ codes, once each", function()
      assert_problem(problems_of(edit({}, { [11] = { "-- error BADLEASE: bad lease" } })),
        "error code 'BADLEASE' must be RLK_<CODE>", 11)
      assert_problem(problems_of(edit({}, { [11] = { "-- error RLK_BADARG: again" } })),
        "duplicate error 'RLK_BADARG'", 11)
    end)

    it("match the codes the code replies", function()
      local undeclared = edit({ [15] = "return redis.error_reply('RLK_BADLEASE no') .. KEYS[1] .. ARGV[1]" })
      assert_problem(problems_of(undeclared),
        "code replies RLK_BADLEASE but the header has no 'error RLK_BADLEASE' line", 15)
      local unused = edit({}, { [11] = { "-- error RLK_WRONGTYPE: never replied" } })
      assert_problem(problems_of(unused), "header lists error RLK_WRONGTYPE but the code never replies it", 11)
    end)
  end)

  describe("time", function()
    it("must say server when the code calls TIME, and only then", function()
      local calls = edit({ [12] = "local now = redis.call('TIME') if #KEYS ~= 1 or #ARGV ~= 1 then" })
      assert_problem(problems_of(calls), "code calls TIME but the header says 'time: none'", 12)
      local declared = edit({ [5] = "-- time: server - reads the clock" })
      assert_problem(problems_of(declared), "header says 'time: server' but the code never calls TIME", 5)
      local both = edit({ [5] = "-- time: server - reads the clock",
                          [12] = "local now = redis.call('time') if #KEYS ~= 1 or #ARGV ~= 1 then" })
      assert.same({}, problems_of(both))
    end)
  end)

  it("sorts problems by line", function()
    local problems = problems_of(edit({ [2] = "-- version: x", [9] = "-- return number: y" }))
    assert.equal(2, problems[1].line)
    assert.equal(9, problems[2].line)
  end)
end)

describe("script_header helpers #tool", function()
  it("derive names from paths", function()
    assert.equal("reentrant/acquire", sh.name_from_path("scripts/reentrant/acquire.lua"))
    assert.equal("reentrant/acquire", sh.name_from_path("/x/y/scripts/reentrant/acquire.lua"))
    assert.equal("kind/op", sh.name_from_path("/tmp/b/kind/op.lua", "/tmp/b/"))
    assert.equal("kind/op", sh.name_from_path("some/where/kind/op.lua"))
  end)

  it("count KEYS, -1 when variadic", function()
    assert.equal(1, sh.numkeys((sh.parse(source(GOOD)))))
    assert.equal(-1, sh.numkeys((sh.parse(edit({ [6] = "-- KEYS[1..n]: locks - keys" })))))
  end)
end)

-- ------------------------------------------------------------------ the command

local files = require("support.files")
local tmpdir, write, run = files.tmpdir, files.write, files.run

for _, lua in ipairs({ "luajit", "lua5.1" }) do
  describe("tools/check-headers.lua under " .. lua .. " #tool", function()
    local dir
    before_each(function() dir = tmpdir() end)
    after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

    it("passes the shipped scripts", function()
      local out, rc = run(lua .. " tools/check-headers.lua scripts")
      assert.equal(0, rc)
      assert.matches("^checked %d+ scripts, 0 problems$", out[#out])
    end)

    it("prints file:line: message per problem, a summary, and exits 1", function()
      write(dir .. "/demo/op.lua", source(GOOD))
      write(dir .. "/demo/bad.lua", edit({ [2] = "-- version: 0" }))
      local out, rc = run(lua .. " tools/check-headers.lua " .. dir)
      assert.equal(1, rc)
      assert.same({
        dir .. "/demo/bad.lua:1: name 'demo/op' does not match the path-derived name 'demo/bad'",
        dir .. "/demo/bad.lua:2: version must be a positive integer, got '0'",
        "checked 2 scripts, 2 problems",
      }, out)
    end)

    it("exits 0 on clean scripts", function()
      write(dir .. "/demo/op.lua", source(GOOD))
      local out, rc = run(lua .. " tools/check-headers.lua " .. dir .. " " .. dir .. "/demo/op.lua")
      assert.equal(0, rc)
      assert.same({ "checked 2 scripts, 0 problems" }, out)
    end)

    it("checks the expanded script: a helper's ARGV and RLK_ codes count, its problems name its line", function()
      -- the helper validates ARGV[1] and replies RLK_BADLEASE; the script itself mentions neither
      write(dir .. "/lib/check_lease.lua", "-- Checks ARGV[1].\n\nlocal function check_lease()\n"
        .. "  if ARGV[1] == '' then return redis.error_reply('RLK_BADLEASE no lease') end\nend\n")
      local header = { GOOD[1], GOOD[2], GOOD[3], GOOD[4], GOOD[5], GOOD[6], GOOD[7], GOOD[8],
                       "-- error RLK_BADLEASE: lease_ms is empty", "-- end" }
      local body = { "--- @include \"lib/check_lease\"", "local err = check_lease()", "if err then return err end",
                     "return redis.call('pexpire', KEYS[1], 1000)" }
      write(dir .. "/demo/op.lua", source(header) .. table.concat(body, "\n") .. "\n")
      local out, rc = run(lua .. " tools/check-headers.lua " .. dir)
      assert.same({ "checked 1 scripts, 0 problems" }, out)
      assert.equal(0, rc)
      -- without the error line, the problem is on the helper's line, expanded into the script
      header[9], header[10] = "-- end", nil
      write(dir .. "/demo/op.lua", source(header) .. table.concat(body, "\n") .. "\n")
      out, rc = run(lua .. " tools/check-headers.lua " .. dir)
      assert.equal(1, rc)
      assert.same({ dir .. "/lib/check_lease.lua:4: code replies RLK_BADLEASE but the header has no "
        .. "'error RLK_BADLEASE' line (expanded into " .. dir .. "/demo/op.lua)",
        "checked 1 scripts, 1 problems" }, out)
    end)

    it("reports an include that does not expand, with its file and line", function()
      write(dir .. "/demo/op.lua", source(GOOD) .. "--- @include \"lib/nope\"\n")
      local out, rc = run(lua .. " tools/check-headers.lua " .. dir)
      assert.equal(1, rc)
      assert.same({ dir .. "/demo/op.lua:16: no such helper 'lib/nope' (" .. dir .. "/lib/nope.lua)",
                    "checked 1 scripts, 1 problems" }, out)
    end)

    it("reports an empty directory and a missing file", function()
      local out, rc = run(lua .. " tools/check-headers.lua " .. dir .. " " .. dir .. "/nope.lua")
      assert.equal(1, rc)
      assert.equal(dir .. ":1: no scripts (*.lua) under this directory", out[1])
      assert.matches("^" .. dir:gsub("%p", "%%%0") .. "/nope%.lua:1: cannot read", out[2])
      assert.equal("checked 1 scripts, 2 problems", out[3])
    end)

    it("exits 2 without arguments", function()
      local _, rc = run(lua .. " tools/check-headers.lua")
      assert.equal(2, rc)
    end)
  end)
end
