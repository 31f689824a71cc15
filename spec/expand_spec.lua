-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of tools/expand.lua (the include expander) and tools/check-helpers.lua (the include rules
-- and the copy checker), on fixture trees in a temporary directory: docs/script-contract.md,
-- "Shared helpers".
package.path = "tools/?.lua;" .. package.path
local expand = require("expand")

local files = require("support.files")
local tmpdir, write, read, run = files.tmpdir, files.write, files.read, files.run

local HEADER = "-- name: demo/op\n-- version: 1\n-- end\n"

-- A helper file: a comment, include lines for deps, a blank line, `local function name`.
local function helper(name, deps, body)
  local s = "-- " .. name .. ": a demo helper.\n"
  for _, d in ipairs(deps or {}) do s = s .. '--- @include "lib/' .. d .. '"\n' end
  return s .. "\nlocal function " .. name .. "(x)\n  " .. (body or "return x") .. "\nend\n"
end

describe("expand #tool", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() files.rm(dir) end)

  local function script(text) write(dir .. "/demo/op.lua", HEADER .. text) end
  local function expanded() return expand.file(dir .. "/demo/op.lua", dir) end

  it("leaves a script without includes byte for byte", function()
    script("\nreturn 1\n")
    assert.equal(HEADER .. "\nreturn 1\n", (expanded()))
    write(dir .. "/demo/no_newline.lua", HEADER .. "return 1")
    assert.equal(HEADER .. "return 1", (expand.file(dir .. "/demo/no_newline.lua", dir)))
  end)

  it("replaces an include line by the helper's code, without its comment block", function()
    write(dir .. "/lib/a.lua", helper("a"))
    script('\n--- @include "lib/a"\n\nreturn a(1)\n')
    assert.equal(HEADER .. "\nlocal function a(x)\n  return x\nend\n\nreturn a(1)\n", (expanded()))
  end)

  it("finds the root two levels above the script when none is given", function()
    write(dir .. "/lib/a.lua", helper("a"))
    script('--- @include "lib/a"\nreturn a(1)\n')
    assert.equal((expanded()), (expand.file(dir .. "/demo/op.lua")))
  end)

  it("emits a helper's includes first, each once, followed by a blank line", function()
    write(dir .. "/lib/a.lua", helper("a"))
    write(dir .. "/lib/b.lua", helper("b", { "a" }))
    write(dir .. "/lib/c.lua", helper("c", { "a", "b" }))
    script('--- @include "lib/c"\nreturn c(1)\n')
    assert.equal(HEADER .. "local function a(x)\n  return x\nend\n\n"
      .. "local function b(x)\n  return x\nend\n\n"
      .. "local function c(x)\n  return x\nend\nreturn c(1)\n", (expanded()))
  end)

  it("does not emit a dependency the script included before", function()
    write(dir .. "/lib/a.lua", helper("a"))
    write(dir .. "/lib/b.lua", helper("b", { "a" }))
    script('--- @include "lib/a"\n\n--- @include "lib/b"\nreturn b(a(1))\n')
    assert.equal(HEADER .. "local function a(x)\n  return x\nend\n\n"
      .. "local function b(x)\n  return x\nend\nreturn b(a(1))\n", (expanded()))
  end)

  it("tells where every expanded line comes from", function()
    write(dir .. "/lib/a.lua", helper("a"))
    script('--- @include "lib/a"\nreturn a(1)\n')
    local _, origins = expanded()
    assert.same({ file = dir .. "/demo/op.lua", line = 3 }, origins[3])
    assert.same({ file = dir .. "/lib/a.lua", line = 3 }, origins[4])
    assert.same({ file = dir .. "/lib/a.lua", line = 5 }, origins[6])
    assert.same({ file = dir .. "/demo/op.lua", line = 5 }, origins[7])
  end)

  describe("refuses, naming the file and line", function()
    it("a missing helper", function()
      script('\n--- @include "lib/nope"\n')
      local text, err = expanded()
      assert.is_nil(text)
      assert.equal(dir .. "/demo/op.lua:5: no such helper 'lib/nope' (" .. dir .. "/lib/nope.lua)", err)
    end)

    it("a missing helper of a helper", function()
      write(dir .. "/lib/a.lua", helper("a", { "gone" }))
      script('--- @include "lib/a"\n')
      local _, err = expanded()
      assert.equal(dir .. "/lib/a.lua:2: no such helper 'lib/gone' (" .. dir .. "/lib/gone.lua)", err)
    end)

    it("a helper the script includes twice", function()
      write(dir .. "/lib/a.lua", helper("a"))
      script('--- @include "lib/a"\nlocal y = 1\n--- @include "lib/a"\n')
      local _, err = expanded()
      assert.equal(dir .. "/demo/op.lua:6: repeated include of 'lib/a' (already included at "
        .. dir .. "/demo/op.lua:4)", err)
    end)

    it("a helper the script includes after another helper pulled it in", function()
      write(dir .. "/lib/a.lua", helper("a"))
      write(dir .. "/lib/b.lua", helper("b", { "a" }))
      script('--- @include "lib/b"\n--- @include "lib/a"\n')
      local _, err = expanded()
      assert.equal(dir .. "/demo/op.lua:5: repeated include of 'lib/a' (already included at "
        .. dir .. "/lib/b.lua:2)", err)
    end)

    it("a helper that includes the same helper twice", function()
      write(dir .. "/lib/a.lua", helper("a"))
      write(dir .. "/lib/b.lua", helper("b", { "a", "a" }))
      script('--- @include "lib/b"\n')
      local _, err = expanded()
      assert.equal(dir .. "/lib/b.lua:3: repeated include of 'lib/a' (first on line 2)", err)
    end)

    it("a circular include", function()
      write(dir .. "/lib/a.lua", helper("a", { "b" }))
      write(dir .. "/lib/b.lua", helper("b", { "c" }))
      write(dir .. "/lib/c.lua", helper("c", { "a" }))
      script('--- @include "lib/a"\n')
      local _, err = expanded()
      assert.equal(dir .. "/lib/c.lua:2: circular include: lib/a -> lib/b -> lib/c -> lib/a", err)
    end)

    it("a helper that includes itself", function()
      write(dir .. "/lib/a.lua", helper("a", { "a" }))
      script('--- @include "lib/a"\n')
      local _, err = expanded()
      assert.equal(dir .. "/lib/a.lua:2: circular include: lib/a -> lib/a", err)
    end)

    it("a malformed include line, or one that names no helper", function()
      script('--- @include lib/a\n')
      assert.matches("^" .. dir:gsub("%p", "%%%0") .. "/demo/op%.lua:4: malformed include", select(2, expanded()))
      script('--- @include "reentrant/acquire"\n')
      assert.matches("/demo/op%.lua:4: include 'reentrant/acquire' must name a helper lib/<helper>",
        select(2, expanded()))
      script('--- @include "lib/../x"\n')
      assert.matches("/demo/op%.lua:4: include 'lib/%.%./x' must name a helper", select(2, expanded()))
    end)

    it("an include after a helper's code began", function()
      write(dir .. "/lib/a.lua", "-- a\nlocal function a() end\n--- @include \"lib/b\"\n")
      script('--- @include "lib/a"\n')
      assert.equal(dir .. "/lib/a.lua:3: include of 'lib/b' after the helper's code began", select(2, expanded()))
    end)

    it("a helper without code", function()
      write(dir .. "/lib/a.lua", "-- nothing here\n")
      script('--- @include "lib/a"\n')
      assert.equal(dir .. "/lib/a.lua:1: helper has no code", select(2, expanded()))
    end)
  end)

  it("lists the scripts without lib/, and the helpers", function()
    write(dir .. "/lib/a.lua", helper("a"))
    write(dir .. "/demo/op.lua", HEADER)
    write(dir .. "/demo/b.lua", HEADER)
    assert.same({ dir .. "/demo/b.lua", dir .. "/demo/op.lua" }, expand.scripts(dir))
    assert.same({ "lib/a" }, expand.helpers(dir))
  end)

  it("expands every shipped script, and the helpers' lines are all that differ", function()
    for _, path in ipairs(expand.scripts("scripts")) do
      local text, origins = expand.file(path, "scripts")
      assert.is_string(text, path)
      for _, o in ipairs(origins) do
        assert.truthy(o.file == path or o.file:match("^scripts/lib/[%w_]+%.lua$"), path)
      end
      assert.is_nil(text:find("--- @include", 1, true), path)
    end
  end)
end)

for _, lua in ipairs({ "luajit", "lua5.1" }) do
  describe("tools/expand.lua under " .. lua .. " #tool", function()
    local dir
    before_each(function() dir = tmpdir() end)
    after_each(function() files.rm(dir) end)

    it("prints the expanded script", function()
      write(dir .. "/lib/a.lua", helper("a"))
      write(dir .. "/demo/op.lua", HEADER .. '--- @include "lib/a"\nreturn a(1)\n')
      local out, rc = run(lua .. " tools/expand.lua " .. dir .. "/demo/op.lua")
      assert.equal(0, rc)
      assert.same({ "-- name: demo/op", "-- version: 1", "-- end", "local function a(x)", "  return x", "end",
                    "return a(1)" }, out)
    end)

    it("exits 1 with file:line: message on a bad include", function()
      write(dir .. "/demo/op.lua", HEADER .. '--- @include "lib/nope"\n')
      local out, rc = run(lua .. " tools/expand.lua " .. dir .. "/demo/op.lua")
      assert.equal(1, rc)
      assert.same({ dir .. "/demo/op.lua:4: no such helper 'lib/nope' (" .. dir .. "/lib/nope.lua)" }, out)
    end)

    it("--out writes every script expanded and removes what is gone", function()
      write(dir .. "/src/lib/a.lua", helper("a"))
      write(dir .. "/src/demo/op.lua", HEADER .. '--- @include "lib/a"\n')
      write(dir .. "/out/demo/old.lua", "stale")
      write(dir .. "/out/manifest.tsv", "kept")
      local out, rc = run(lua .. " tools/expand.lua --out " .. dir .. "/out " .. dir .. "/src")
      assert.same({}, out)
      assert.equal(0, rc)
      assert.equal(HEADER .. "local function a(x)\n  return x\nend\n", read(dir .. "/out/demo/op.lua"))
      assert.is_nil(read(dir .. "/out/demo/old.lua"))
      assert.is_nil(read(dir .. "/out/lib/a.lua"))
      assert.equal("kept", read(dir .. "/out/manifest.tsv"))
    end)

    it("--out exits 1 and names every script that does not expand", function()
      write(dir .. "/src/demo/op.lua", HEADER .. '--- @include "lib/nope"\n')
      local out, rc = run(lua .. " tools/expand.lua --out " .. dir .. "/out " .. dir .. "/src")
      assert.equal(1, rc)
      assert.matches("/src/demo/op%.lua:4: no such helper 'lib/nope'", out[1])
    end)

    it("exits 2 on bad usage", function()
      local _, rc = run(lua .. " tools/expand.lua")
      assert.equal(2, rc)
      _, rc = run(lua .. " tools/expand.lua --bogus")
      assert.equal(2, rc)
    end)
  end)

  describe("tools/check-helpers.lua under " .. lua .. " #tool", function()
    local dir
    before_each(function() dir = tmpdir() end)
    after_each(function() files.rm(dir) end)

    local function check() return run(lua .. " tools/check-helpers.lua " .. dir) end

    it("passes the shipped scripts", function()
      local out, rc = run(lua .. " tools/check-helpers.lua scripts")
      assert.equal(0, rc)
      assert.matches("^checked %d+ scripts and %d+ helpers, 0 problems$", out[#out])
    end)

    it("passes a tree whose shared function is a helper", function()
      write(dir .. "/lib/a.lua", helper("a"))
      write(dir .. "/demo/one.lua", HEADER .. '--- @include "lib/a"\n')
      write(dir .. "/demo/two.lua", HEADER .. '--- @include "lib/a"\n')
      local out, rc = check()
      assert.equal(0, rc)
      assert.same({ "checked 2 scripts and 1 helpers, 0 problems" }, out)
    end)

    it("finds a function copied into two scripts", function()
      local fn = "local function twice(x)\n  return 2 * x\nend\n"
      write(dir .. "/demo/one.lua", HEADER .. fn)
      write(dir .. "/demo/two.lua", HEADER .. "\n" .. fn)
      local out, rc = check()
      assert.equal(1, rc)
      assert.same({
        dir .. "/demo/two.lua:5: local function twice is a copy of " .. dir .. "/demo/one.lua:4: move it to "
          .. dir .. "/lib/twice.lua and include it",
        "checked 2 scripts and 0 helpers, 1 problems" }, out)
    end)

    it("finds one name with two bodies, in two scripts or a script and a helper", function()
      write(dir .. "/lib/a.lua", helper("a"))
      write(dir .. "/demo/one.lua", HEADER .. '--- @include "lib/a"\nlocal function b(x)\n  return x\nend\n')
      write(dir .. "/demo/two.lua", HEADER .. 'local function a(x)\n  return -x\nend\n'
        .. 'local function b(x)\n  return -x\nend\n')
      local out, rc = check()
      assert.equal(1, rc)
      assert.same({
        dir .. "/demo/two.lua:4: local function a differs from the one at " .. dir .. "/lib/a.lua:3: "
          .. "give one of them another name",
        dir .. "/demo/two.lua:7: local function b differs from the one at " .. dir .. "/demo/one.lua:5: "
          .. "give one of them another name",
        "checked 2 scripts and 1 helpers, 2 problems" }, out)
    end)

    it("finds an unused helper, and one used only by another helper counts as used", function()
      write(dir .. "/lib/a.lua", helper("a"))
      write(dir .. "/lib/b.lua", helper("b", { "a" }))
      write(dir .. "/lib/unused.lua", helper("unused"))
      write(dir .. "/demo/op.lua", HEADER .. '--- @include "lib/b"\n')
      local out, rc = check()
      assert.equal(1, rc)
      assert.same({ dir .. "/lib/unused.lua:1: no script includes this helper (directly or through a helper)",
                    "checked 1 scripts and 3 helpers, 1 problems" }, out)
    end)

    it("checks the shape of a helper file", function()
      write(dir .. "/lib/nodoc.lua", "local function nodoc()\nend\n")
      write(dir .. "/lib/named.lua", "-- a helper\nlocal function other() end\n")
      write(dir .. "/lib/two.lua", "-- a helper\nlocal function two()\nend\nlocal x = 1\n")
      write(dir .. "/demo/op.lua", HEADER .. '--- @include "lib/nodoc"\n--- @include "lib/named"\n'
        .. '--- @include "lib/two"\n')
      local out, rc = check()
      assert.equal(1, rc)
      assert.same({
        dir .. "/lib/named.lua:2: the code must be 'local function named(...)' "
          .. "(one helper per file, named as the file)",
        dir .. "/lib/nodoc.lua:1: a helper starts with a comment saying what it does",
        dir .. "/lib/two.lua:4: nothing but the one function may follow it",
        "checked 1 scripts and 3 helpers, 3 problems" }, out)
    end)

    it("reports a script that does not expand", function()
      write(dir .. "/demo/op.lua", HEADER .. '--- @include "lib/a"\n--- @include "lib/a"\n')
      write(dir .. "/lib/a.lua", helper("a"))
      local out, rc = check()
      assert.equal(1, rc)
      assert.same({ dir .. "/demo/op.lua:5: repeated include of 'lib/a' (already included at "
        .. dir .. "/demo/op.lua:4)", "checked 1 scripts and 1 helpers, 1 problems" }, out)
    end)
  end)
end

describe("the bundle's scripts #tool", function()
  -- Redis and Valkey refuse a bulk string over 16 KB from a client that has not authenticated yet
  -- and close its connection; rlk sends its first commands (SCRIPT LOAD of every script) behind
  -- AUTH, so that a wrong password must still come back as the server's refusal, not as a
  -- connection reset (it_client test_auth). Every script, as Redis runs it, stays within 16 KB.
  it("every script, expanded, fits in the 16 KB an unauthenticated client may send", function()
    local largest, name = 0, nil
    for _, path in ipairs(expand.scripts("scripts")) do
      local text = assert(expand.file(path, "scripts"))
      assert.is_true(#text <= 16384, path .. " expands to " .. #text .. " bytes, over 16384")
      if #text > largest then largest, name = #text, path end
    end
    assert.is_truthy(name)
  end)
end)
