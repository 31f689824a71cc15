-- luacheck configuration: `luacheck scripts spec tools` must report 0 warnings.
--
-- scripts/  the "redis" std: only what Redis 7 gives a script (Lua 5.1 with KEYS, ARGV, redis,
--           cjson, bit, struct, cmsgpack, the base functions Redis keeps, string, table, math).
--           No os, io, print, require, load*, dofile, module, coroutine, debug, getfenv/setfenv.
-- spec/     Lua 5.1 (also what LuaJIT runs) plus busted's globals.
-- tools/    Lua 5.1 with io and os: command-line tools that run under LuaJIT and PUC Lua 5.1.

local lua51_string = { "byte", "char", "dump", "find", "format", "gmatch", "gsub", "len", "lower",
                       "match", "rep", "reverse", "sub", "upper" }
local lua51_table = { "concat", "insert", "maxn", "remove", "sort" }
local lua51_math = { "abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "cosh", "deg", "exp",
                     "floor", "fmod", "frexp", "huge", "ldexp", "log", "log10", "max", "min", "modf",
                     "pi", "pow", "rad", "random", "randomseed", "sin", "sinh", "sqrt", "tan", "tanh" }

stds.redis = {
  read_globals = {
    "KEYS", "ARGV",
    -- the base library as Redis keeps it, minus what the conventions forbid
    "assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget",
    "rawset", "select", "setmetatable", "tonumber", "tostring", "type", "unpack", "xpcall",
    "_VERSION",
    redis = { fields = {
      "call", "pcall", "error_reply", "status_reply", "sha1hex", "log", "setresp",
      "set_repl", "replicate_commands", "breakpoint", "debug", "acl_check_cmd",
      "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING",
      "REPL_NONE", "REPL_AOF", "REPL_SLAVE", "REPL_REPLICA", "REPL_ALL",
      "REDIS_VERSION", "REDIS_VERSION_NUM",
    } },
    cjson = { other_fields = true },
    bit = { fields = { "tobit", "tohex", "bnot", "band", "bor", "bxor", "lshift", "rshift", "arshift",
                       "rol", "ror", "bswap" } },
    struct = { fields = { "pack", "unpack", "size" } },
    cmsgpack = { fields = { "pack", "unpack", "unpack_one", "unpack_limit" } },
    string = { fields = lua51_string },
    table = { fields = lua51_table },
    math = { fields = lua51_math },
  },
}

-- tools/ and anything not matched below: command-line Lua 5.1 (io, os, arg).
std = "lua51"
max_line_length = 120

files["scripts/"] = { std = "redis" }
-- `jit` may be read: code that runs under both interpreters tests it to find LuaJIT.
files["spec/"] = { std = "lua51+busted", read_globals = { "jit" } }
