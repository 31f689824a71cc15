-- luacheck configuration: `luacheck scripts spec tools` must report 0 warnings (run it from the
-- repository root), and so must `luacheck --std redis <dir>` on the expanded scripts (ctest's
-- luacheck_expanded runs it on the build's bundle directory).
--
-- scripts/  the "redis" std: only what Redis 7 gives a script (Lua 5.1 with KEYS, ARGV, redis,
--           cjson, bit, struct, cmsgpack, the base functions Redis keeps, string, table, math).
--           No os, io, print, require, load*, dofile, module, coroutine, debug, getfenv/setfenv.
--           A script as written calls the helpers its `--- @include "lib/<helper>"` lines pull in,
--           so here the helper names are read-only globals of scripts/<kind>/; the expanded check,
--           where every helper is a local the script defines, is the strict one.
-- scripts/lib/  one helper per file: `local function <helper>` that nothing in the file calls, so
--           that one unused function (warning 211 for exactly that name) is allowed there and
--           nothing else; a constant the helper reads from its script is declared in the file
--           (`-- luacheck: read globals MAX_COUNT`).
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

-- The helpers under scripts/lib (this file is read from the repository root), and the constants
-- they read from their scripts: a script as written may define such a constant only for a helper.
local helpers, constants = {}, {}
do
  local p = io.popen("ls scripts/lib 2>/dev/null")
  for file in p:read("*a"):gmatch("[^\n]+") do
    local name = file:match("^([%w_]+)%.lua$")
    helpers[#helpers + 1] = name
    local f = io.open("scripts/lib/" .. file, "r")
    for names in f:read("*a"):gmatch("\n%-%- luacheck: read globals ([%w_ ,]+)") do
      for c in names:gmatch("[%w_]+") do constants[#constants + 1] = "211/" .. c end
    end
    f:close()
  end
  p:close()
end

files["scripts/"] = { std = "redis", read_globals = helpers, ignore = constants }
files["scripts/lib/"] = { std = "redis", read_globals = helpers }
for _, name in ipairs(helpers) do
  files["scripts/lib/" .. name .. ".lua"] = { ignore = { "211/" .. name } }
end
-- `jit` may be read: code that runs under both interpreters tests it to find LuaJIT.
files["spec/"] = { std = "lua51+busted", read_globals = { "jit" } }
