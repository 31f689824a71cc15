-- SPDX-License-Identifier: BSD-3-Clause
-- Where Valkey 9.1 (9.1.2, built by tools/bootstrap from Debian's source package) replies otherwise
-- than Redis 7.0 (the mock's reference) to a conformance case: case name -> { [step] = Valkey 9's
-- exact reply }, checked as spec/conformance/valkey8.lua's (spec/conformance_spec.lua); every case
-- is named in docs/servers.md under "Conformance: Valkey 9.1". Recorded with
-- RLK_CONFORMANCE_RECORD, then explained. None of these is a reply of one of rlk's scripts: those
-- agree on every server (docs/servers.md).
-- luacheck: max line length 260
local NIL = require("support.reply").NIL

return {
  -- Every error raised inside a script or function says where without the script's SHA or the
  -- function's name: "... script: on @user_script:1." (Redis 7.0: "... script: <sha>, on
  -- @user_script:1."). The mock's text is turned into Valkey 9's before every comparison; the
  -- spec fails when no error needed the rule. rlk reads an error by its code (the first word).
  _error_form = function(err) return (err:gsub(" script: [^%s,]+, on ", " script: on ")) end,
  -- GETEX of a missing key with a bad expiry (EX -5) is refused with an error before the key is looked up; Redis 7.0 replies nil
  ["strings: GETEX PERSIST and PX"] = { [7] = { err = "ERR invalid expire time in 'getex' command" } },
  -- a hexadecimal score (0x10) is refused, so the whole ZADD is (Valkey 9 parses doubles with fast_float, which reads no hex; strtod does): the key is never made, and the steps after it read nothing
  ["zsets: ZADD score formats"] = { [1] = { err = "ERR value is not a valid float" }, [2] = {}, [3] = NIL, [4] = NIL, [5] = NIL, [6] = NIL },
  -- a bound with a leading space (" 2") is refused: fast_float skips no white space
  ["zsets: ZRANGEBYSCORE bounds"] = { [8] = { err = "ERR min or max is not a float" } },
  -- doubles: shortest round-trip text (as Valkey 8)
  ["zsets: ZINCRBY"] = { [3] = "1.1", [4] = "1.1" },
  -- a Lua number argument is turned into text with the shortest round-trip form (as Valkey 8)
  ["scripting: 0.1 as an argument"] = { [1] = "0.1" },
  -- a Lua number argument: the shortest round-trip form written without an exponent (as Valkey 8)
  ["scripting: 2^63 as an argument"] = { [1] = "9223372036854776000" },
  -- a Lua number argument: -0 is written "0" (as Valkey 8)
  ["scripting: -0 as an argument"] = { [1] = "0" },
  -- error text: "Redis" dropped (as Valkey 8), and the script's place without its SHA (_error_form)
  ["scripting: unknown command from a script"] = { [1] = { err = "ERR Unknown command called from script script: on @user_script:1." } },
  -- error text: "Redis" dropped (as Valkey 8)
  ["scripting: unknown command from redis.pcall"] = { [1] = { err = "ERR Unknown command called from script" } },
  -- error text: "Redis" dropped, no SHA
  ["scripting: wrong arity from a script"] = { [1] = { err = "ERR Wrong number of args calling command from script script: on @user_script:1." } },
  -- error text: "Redis" dropped
  ["scripting: wrong arity from redis.pcall"] = { [1] = { err = "ERR Wrong number of args calling command from script" } },
  -- error text: "Redis" dropped, no SHA
  ["scripting: HSET arity check from a script"] = { [1] = { err = "ERR Wrong number of args calling command from script script: on @user_script:1." } },
  -- error text: "redis lib" dropped, no SHA
  ["scripting: redis.call without arguments"] = { [1] = { err = "ERR Please specify at least one argument for this call script: on @user_script:1." } },
  -- error text: "redis lib" dropped
  ["scripting: redis.pcall without arguments"] = { [1] = { err = "ERR Please specify at least one argument for this call" } },
  -- error text: "Lua redis lib command" becomes "Command", no SHA
  ["scripting: boolean argument"] = { [1] = { err = "ERR Command arguments must be strings or integers script: on @user_script:1." } },
  -- error text, as above
  ["scripting: table argument"] = { [1] = { err = "ERR Command arguments must be strings or integers script: on @user_script:1." } },
  -- error text, as above
  ["scripting: nil argument"] = { [1] = { err = "ERR Command arguments must be strings or integers script: on @user_script:1." } },
  -- error text: "Lua redis lib command" becomes "Command"
  ["scripting: boolean argument to redis.pcall"] = { [1] = { err = "ERR Command arguments must be strings or integers" } },
  -- error text: "This Redis command" becomes "This Valkey command", no SHA
  ["scripting: EVAL from a script"] = { [1] = { err = "ERR This Valkey command is not allowed from script script: on @user_script:1." } },
  -- error text: "debug level" becomes "log level", no SHA
  ["scripting: redis.log with a bad level"] = { [1] = { err = "ERR Invalid log level. script: on @user_script:1." } },
  -- error text: the function is named server.log(), no SHA
  ["scripting: redis.log without a message"] = { [1] = { err = "ERR server.log() requires two arguments or more. script: on @user_script:1." } },
  -- redis.REDIS_VERSION is the Redis version Valkey is compatible with (7.2.4), not 7.0.15
  ["scripting: server version"] = { [1] = { "7.2.4", 459268 } },
  -- error text: "Please use EVAL." dropped (the code NOSCRIPT is the same; rlk matches the code)
  ["scripting: EVALSHA of an unknown script"] = { [1] = { err = "NOSCRIPT No matching script." } },
  -- the redis table also has SERVER_NAME, VALKEY_VERSION, VALKEY_VERSION_NUM
  ["scripting: the names in the redis table"] = { [1] = {
    "LOG_DEBUG", "LOG_NOTICE", "LOG_VERBOSE", "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM",
    "REPL_ALL", "REPL_AOF", "REPL_NONE", "REPL_REPLICA", "REPL_SLAVE", "SERVER_NAME",
    "VALKEY_VERSION", "VALKEY_VERSION_NUM", "acl_check_cmd", "breakpoint", "call", "debug",
    "error_reply", "log", "pcall", "replicate_commands", "set_repl", "setresp", "sha1hex",
    "status_reply" } },
  -- the sandbox has os with os.clock only: `return os` is an empty array, not an error
  ["scripting: no os"] = { [1] = {} },
}
