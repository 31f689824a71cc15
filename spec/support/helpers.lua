-- SPDX-License-Identifier: BSD-3-Clause
-- Small helpers for specs.
--
--   local helpers = require("support.helpers")
--   helpers.it_virtual("expires after the lease", function() ... r:advance(30001) ... end)
--
-- it_virtual registers a test that needs the mock's virtual clock: a normal
-- `it` on the mock backend, a pending test (busted prints it under
-- "pending", not as a success or failure) on real Redis.

local backend = require("support.backend")
local reply = require("support.reply")

local helpers = {}

helpers.NIL = reply.NIL

function helpers.backend_name()
  return backend.default_name()
end

function helpers.virtual_time()
  return backend.default_name() == "mock"
end

-- busted records where a test was declared from the caller of it/pending.
-- Under LuaJIT a tail call makes that the spec's line instead of this
-- file's; PUC Lua 5.1 would show "(tail call)", so there the call is plain
-- (a failure's message still names the spec's file and line).
local function declare(f, ...)
  if jit then return f(...) end
  local r = f(...)
  return r
end

function helpers.it_virtual(name, fn)
  local busted = require("busted")
  if helpers.virtual_time() then
    return declare(busted.it, name, fn)
  end
  return declare(busted.pending, name .. " [needs the virtual clock: mock backend only]")
end

-- The code (first word) of an error reply, or nil for any other reply.
function helpers.error_code(r)
  if reply.is_error(r) then return reply.error_code(r.err) end
  return nil
end

-- A readable one-line form of a reply (for assertion messages).
helpers.describe = reply.describe

return helpers
