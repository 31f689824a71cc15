-- SPDX-License-Identifier: BSD-3-Clause
-- Where Redis 8.0 (8.0.6, built by tools/bootstrap from Debian's source package) replies otherwise
-- than Redis 7.0 (the mock's reference) to a conformance case: case name -> { [step] = Redis 8's
-- exact reply }. On Redis 8.0 (RLK_TEST_SERVER=redis8) spec/conformance_spec.lua compares each
-- listed step with the reply here (exactly: errors by their whole text) and every other step with
-- the mock as usual; it fails when a listed step's reply changes, when an entry is no longer a
-- difference (the mock gives the same), and when docs/servers.md does not name the case under
-- "Conformance: Redis 8.0". None of these is a reply of one of rlk's scripts: those agree on
-- every server (docs/servers.md). Recorded with RLK_CONFORMANCE_RECORD, then explained.
-- luacheck: max line length 260

return {
  -- doubles: Redis 8 prints the shortest text that reads back as the same double (fpconv, since Redis 7.2); Redis 7.0 prints 17 significant digits (0.10000000000000001, 9.9998886718268301e-321)
  ["zsets: ZADD score formats"] = { [2] = { "c", "-inf", "d", "0", "g", "1e-320", "a", "0.1", "j", "0.5", "k", "1", "i", "2", "f", "3", "h", "16", "e", "1500", "b", "inf" }, [3] = "0.1", [6] = "1e-320" },
  -- a bound with a leading space (" 2") is refused: Redis 8 parses doubles with fast_float, which does not skip white space as strtod does
  ["zsets: ZRANGEBYSCORE bounds"] = { [8] = { err = "ERR min or max is not a float" } },
  -- doubles: ZINCRBY's reply and the score in the shortest round-trip text, as above
  ["zsets: ZINCRBY"] = { [3] = "1.1", [4] = "1.1" },
  -- a Lua number passed to redis.call is turned into text with the shortest round-trip form: 0.1 stays "0.1" (Redis 7.0: "0.10000000000000001")
  ["scripting: 0.1 as an argument"] = { [1] = "0.1" },
  -- a Lua number argument: 2^63 written without an exponent in its shortest form (Redis 7.0: %.17g, "9.2233720368547758e+18")
  ["scripting: 2^63 as an argument"] = { [1] = "9223372036854776000" },
  -- a Lua number argument: -0 is written "0" (Redis 7.0: "-0")
  ["scripting: -0 as an argument"] = { [1] = "0" },
  -- error text: "debug level" becomes "log level"
  ["scripting: redis.log with a bad level"] = { [1] = { err = "ERR Invalid log level. script: 0d2bb5cc8fe34dbfa499420ecaa69dc2e6c8130e, on @user_script:1." } },
  -- redis.REDIS_VERSION and REDIS_VERSION_NUM are the server's own, 8.0.6
  ["scripting: server version"] = { [1] = { "8.0.6", 524294 } },
  -- the sandbox exposes os, with os.clock only (since Redis 7.2): `return os` is an empty array, not an error
  ["scripting: no os"] = { [1] = {} },
}
