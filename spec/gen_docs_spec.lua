-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of tools/sha1.lua and tools/gen-docs.lua.
package.path = "tools/?.lua;" .. package.path
local sha1 = require("sha1")
local expand = require("expand")

local files = require("support.files")
local run, tmpdir = files.run, files.tmpdir

local function read(path)
  return assert(files.read(path))
end

local SCRIPTS = { "reentrant/acquire", "reentrant/release", "reentrant/renew", "reentrant/renew_many",
                  "reentrant/force_release", "token/acquire", "token/release", "token/extend" }

describe("sha1.hex #tool", function()
  it("matches the FIPS 180 examples", function()
    assert.equal("da39a3ee5e6b4b0d3255bfef95601890afd80709", sha1.hex(""))
    assert.equal("a9993e364706816aba3e25717850c26c9cd0d89d", sha1.hex("abc"))
    assert.equal("84983e441c3bd26ebaae4aa1f95129e5e54670f1",
      sha1.hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))
  end)

  it("matches sha1sum around the padding boundaries", function()
    for _, n in ipairs({ 1, 55, 56, 57, 63, 64, 65, 119, 120, 200 }) do
      local out = run("head -c " .. n .. " /dev/zero | tr '\\000' '\\377' | sha1sum")
      assert.equal(out[1]:sub(1, 40), sha1.hex(string.rep("\255", n)), "length " .. n)
    end
  end)

  it("matches sha1sum on every script", function()
    for _, name in ipairs(SCRIPTS) do
      local path = "scripts/" .. name .. ".lua"
      local out = run("sha1sum " .. path)
      assert.equal(out[1]:sub(1, 40), sha1.hex(read(path)), name)
    end
  end)
end)

for _, lua in ipairs({ "luajit", "lua5.1" }) do
  describe("tools/gen-docs.lua under " .. lua .. " #tool", function()
    local dir
    before_each(function() dir = tmpdir() end)
    after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

    it("writes what --check accepts, with a section and the SHA-1 of every script", function()
      local _, rc = run(lua .. " tools/gen-docs.lua --out " .. dir .. "/ref.md")
      assert.equal(0, rc)
      local out, check_rc = run(lua .. " tools/gen-docs.lua --check --out " .. dir .. "/ref.md")
      assert.same({}, out)
      assert.equal(0, check_rc)
      local text = read(dir .. "/ref.md")
      for _, name in ipairs(SCRIPTS) do
        local section = text:match("\n## " .. name:gsub("%p", "%%%0") .. "\n(.-)\n## ")
          or text:match("\n## " .. name:gsub("%p", "%%%0") .. "\n(.*)$")
        assert.is_not_nil(section, name)
        -- the SHA-1 of the expanded script: what the build embeds and SCRIPT LOAD returns
        local expanded = assert(expand.file("scripts/" .. name .. ".lua", "scripts"))
        assert.truthy(section:find("SHA-1: `" .. sha1.hex(expanded) .. "`", 1, true), name)
        assert.truthy(section:find("| returns | meaning |", 1, true), name)
      end
    end)

    it("--check exits 1 on a stale reference", function()
      run(lua .. " tools/gen-docs.lua --out " .. dir .. "/ref.md")
      local text = read(dir .. "/ref.md")
      local f = assert(io.open(dir .. "/ref.md", "wb"))
      f:write((text:gsub("Version: 1", "Version: 7", 1)))
      f:close()
      local out, rc = run(lua .. " tools/gen-docs.lua --check --out " .. dir .. "/ref.md")
      assert.equal(1, rc)
      assert.matches("is stale", out[1])
    end)

    it("refuses scripts whose headers have problems", function()
      os.execute("mkdir -p " .. dir .. "/scripts/demo")
      local f = assert(io.open(dir .. "/scripts/demo/op.lua", "wb"))
      f:write("-- name: demo/other\n-- version: 1\n-- end\nreturn 1\n")
      f:close()
      local out, rc = run(lua .. " tools/gen-docs.lua --scripts " .. dir .. "/scripts --out " .. dir .. "/ref.md")
      assert.equal(1, rc)
      assert.matches("demo/op%.lua:1: name 'demo/other' does not match", out[1])
      assert.is_nil(io.open(dir .. "/ref.md", "rb"))
    end)

    it("exits 2 on an unknown argument", function()
      local _, rc = run(lua .. " tools/gen-docs.lua --bogus")
      assert.equal(2, rc)
    end)
  end)
end
