-- SPDX-License-Identifier: BSD-3-Clause
-- bench_tap.lua - what the benchmark's Lua tests (test_*.lua beside it) share: TAP output
-- (`ok N - name` / `not ok N - name` with the error as `# ` lines, then `1..N` and a count),
-- a formatted check, shell quoting and running, and reading a file.
--
--   local T = require("bench_tap")
--   T.test("name", function() T.check(x == 1, "x is %s", x) end)
--   T.finish()          -- prints the plan and the count; exits 1 when a test failed

local M = {}
local passed, failed, count = 0, 0, 0

function M.test(name, fn)
    count = count + 1
    local ok, err = pcall(fn)
    if ok then
        passed = passed + 1
        print(string.format("ok %d - %s", count, name))
    else
        failed = failed + 1
        print(string.format("not ok %d - %s\n# %s", count, name,
                            (tostring(err):gsub("\n", "\n# "))))
    end
end

-- Fails the calling test with the formatted message, naming the caller's line.
function M.check(cond, fmt, ...)
    if not cond then
        error(string.format(fmt, ...), 2)
    end
end

-- s as one sh word.
function M.q(s)
    return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- The file's content, "" when it cannot be read.
function M.read_file(path)
    local f = io.open(path, "r")
    if not f then
        return ""
    end
    local s = f:read("*a")
    f:close()
    return s
end

-- Runs a shell script; its standard output once it has ended.
function M.sh(script)
    local p = assert(io.popen(script, "r"))
    local out = p:read("*a")
    p:close()
    return out
end

-- The plan and the count ("# label: N passed, M failed", label optional); exits.
function M.finish(label)
    print(string.format("1..%d", count))
    print(string.format("# %s%d passed, %d failed", label and (label .. ": ") or "", passed,
                        failed))
    os.exit(failed == 0 and 0 or 1)
end

return M
