-- SPDX-License-Identifier: BSD-3-Clause
-- Where Valkey 8.0 (Debian bookworm-backports 8.0.1) replies otherwise than Redis 7.0 (the mock's
-- reference) to a conformance case: case name -> { [step] = Valkey's exact reply }. On Valkey 8.0
-- (RLK_TEST_SERVER=valkey) spec/conformance_spec.lua compares each listed step with the reply
-- here (exactly: errors by their whole text) and every other step with the mock as usual; it
-- fails when a listed step's reply changes, when an entry is no longer a difference (the mock
-- gives the same), and when docs/servers.md does not name the case under "Conformance: Valkey
-- 8.0". None of these is a reply of one of rlk's scripts: those agree on every server
-- (docs/servers.md).
-- luacheck: max line length 260
local NIL = require("support.reply").NIL

return {
  -- doubles: Valkey 8 prints the shortest text that reads back as the same double (Redis 7.2's change, fpconv); Redis 7.0 prints 17 significant digits
  ["zsets: ZADD score formats"] = { [2] = { "c", "-inf", "d", "0", "g", "1e-320", "a", "0.1", "j", "0.5", "k", "1", "i", "2", "f", "3", "h", "16", "e", "1500", "b", "inf" }, [3] = "0.1", [6] = "1e-320" },
  -- doubles: shortest round-trip text, as above
  ["zsets: ZINCRBY"] = { [3] = "1.1", [4] = "1.1" },
  -- a Lua number argument is turned into text with the shortest round-trip form
  ["scripting: 0.1 as an argument"] = { [1] = "0.1" },
  -- a Lua number argument: %.17g vs the shortest round-trip form written without an exponent
  ["scripting: 2^63 as an argument"] = { [1] = "9223372036854776000" },
  -- a Lua number argument: -0 is written "0"
  ["scripting: -0 as an argument"] = { [1] = "0" },
  -- error text: "Redis" dropped from the message
  ["scripting: unknown command from a script"] = { [1] = { err = "ERR Unknown command called from script script: acbd82eaa95645cdb559114bde17841580fa0f8c, on @user_script:1." } },
  -- error text: "Redis" dropped
  ["scripting: unknown command from redis.pcall"] = { [1] = { err = "ERR Unknown command called from script" } },
  -- error text: "Redis" dropped
  ["scripting: wrong arity from a script"] = { [1] = { err = "ERR Wrong number of args calling command from script script: 72273adc3c5955bf8543f1ad6ce893355b89617d, on @user_script:1." } },
  -- error text: "Redis" dropped
  ["scripting: wrong arity from redis.pcall"] = { [1] = { err = "ERR Wrong number of args calling command from script" } },
  -- error text: "Redis" dropped
  ["scripting: HSET arity check from a script"] = { [1] = { err = "ERR Wrong number of args calling command from script script: 62746198e9d1307ead514de5f58a2cc156f325e2, on @user_script:1." } },
  -- error text: "redis lib" dropped
  ["scripting: redis.call without arguments"] = { [1] = { err = "ERR Please specify at least one argument for this call script: 0a907e1429221a4d85516cab7fd219a82a9439d8, on @user_script:1." } },
  -- error text: "redis lib" dropped
  ["scripting: redis.pcall without arguments"] = { [1] = { err = "ERR Please specify at least one argument for this call" } },
  -- error text: "Lua redis lib command" becomes "Command"
  ["scripting: boolean argument"] = { [1] = { err = "ERR Command arguments must be strings or integers script: c7557e3da172fab65869374864ec2ecd40bb1294, on @user_script:1." } },
  -- error text, as above
  ["scripting: table argument"] = { [1] = { err = "ERR Command arguments must be strings or integers script: 918237887cd97032f491d776f97a03473d6d75f8, on @user_script:1." } },
  -- error text, as above
  ["scripting: nil argument"] = { [1] = { err = "ERR Command arguments must be strings or integers script: 42447ac8464dd9a598c518c5e0b207c505388f6c, on @user_script:1." } },
  -- error text, as above
  ["scripting: boolean argument to redis.pcall"] = { [1] = { err = "ERR Command arguments must be strings or integers" } },
  -- error text: "debug level" becomes "log level"
  ["scripting: redis.log with a bad level"] = { [1] = { err = "ERR Invalid log level. script: 0d2bb5cc8fe34dbfa499420ecaa69dc2e6c8130e, on @user_script:1." } },
  -- error text: the function is named server.log()
  ["scripting: redis.log without a message"] = { [1] = { err = "ERR server.log() requires two arguments or more. script: 224c2b6c4d4a245fb6c4394854d25a2ca448909c, on @user_script:1." } },
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
  -- the sandbox has os with os.clock only (as Redis 7.2): `return os` is an empty array, not an error
  ["scripting: no os"] = { [1] = {  } },
  -- setfenv is a global of Valkey 8's script sandbox (Redis 7.0 has none); a function converts to a nil reply
  ["scripting: no setfenv"] = { [1] = NIL },
  -- getfenv is a global of the sandbox too (nil reply for a function)
  ["scripting: no getfenv"] = { [1] = NIL },
  -- newproxy is a global of the sandbox too (nil reply for a function)
  ["scripting: no newproxy"] = { [1] = NIL },
}
