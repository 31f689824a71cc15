-- SPDX-License-Identifier: BSD-3-Clause
-- Conformance cases: Redis 7 Functions as the mock models them (FUNCTION LOAD / DELETE / FLUSH,
-- FCALL / FCALL_RO). Each case starts with FUNCTION FLUSH: FLUSHDB keeps a real server's
-- libraries. Error texts are compared exactly (they name the function and @user_function:<line>).

local LIB = "#!lua name=t\n"
  .. "redis.register_function('t_set', function(keys, args)\n"
  .. "  redis.call('set', keys[1], args[1])\n"
  .. "  return {keys[1], args[1], #keys, #args}\n"
  .. "end)\n"
  .. "redis.register_function{function_name = 't_get', flags = {'no-writes'},\n"
  .. "  callback = function(keys) return redis.call('get', keys[1]) end}\n"
  .. "redis.register_function('t_fail', function(keys)\n"
  .. "  return redis.call('hincrby', keys[1], 'f', 1)\n"
  .. "end)\n"
  .. "redis.register_function('t_globals', function() return KEYS end)\n"
  .. "redis.register_function('t_err', function() return redis.error_reply('RLK_X bad') end)\n"

local FLUSH = { "FUNCTION", "FLUSH" }
local LOAD = { "FUNCTION", "LOAD", LIB }

local function case(name, steps, fields)
  local c = fields or {}
  c.name = name
  c.setup = { FLUSH }
  c.steps = steps
  c.err_exact = true
  return c
end

return {
  case("load replies the library name; FCALL runs with keys and args",
    { LOAD, { "FCALL", "t_set", "1", "k", "v" }, { "GET", "k" }, { "FCALL_RO", "t_get", "1", "k" } }),
  case("a second LOAD of the same name is refused; REPLACE loads it",
    { LOAD, { "FUNCTION", "LOAD", LIB, error = true }, { "FUNCTION", "LOAD", "REPLACE", LIB } }),
  case("FCALL_RO of a function without no-writes is refused",
    { LOAD, { "FCALL_RO", "t_set", "1", "k", "v", error = true }, { "EXISTS", "k" } }),
  case("FCALL of an unknown function",
    { LOAD, { "FCALL", "nope", "0", error = true } }),
  case("a command's error inside a function names the function and its line",
    { LOAD, { "SET", "h", "x" }, { "FCALL", "t_fail", "1", "h", error = true } }),
  case("no KEYS global inside a function",
    { LOAD, { "FCALL", "t_globals", "0", error = true } }),
  case("redis.error_reply from a function",
    { LOAD, { "FCALL", "t_err", "0", error = true } }),
  case("FUNCTION DELETE, then the function is gone",
    { LOAD, { "FUNCTION", "DELETE", "t" }, { "FCALL", "t_get", "1", "k", error = true },
      { "FUNCTION", "DELETE", "t", error = true } }),
  case("a library without metadata, or without functions",
    { { "FUNCTION", "LOAD", "return 1", error = true },
      { "FUNCTION", "LOAD", "#!lua name=e\nlocal x = 1", error = true } }),
  case("numkeys larger than the arguments",
    { LOAD, { "FCALL", "t_set", "3", "k", error = true } }),
}
