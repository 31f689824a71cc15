-- SPDX-License-Identifier: BSD-3-Clause
-- test_async_smoke: rlk-bench through the non-blocking API against a real redis-server, as
-- behaviour (no speed is asserted): W1 and W2 with --api async (threads and --procs) complete
-- with no error, no overlap and no stuck waiter; --workload pending serves every request with no
-- overlap, with every request pending at the peak and file descriptors that do not grow with the
-- number of requests (at most 2 more than before: the command and pub/sub connections).
--
--   tools/with-redis luajit c/bench/test_async_smoke.lua RLK_BENCH SCRATCH_DIR
-- (with-redis sets RLK_REDIS_PORT.) TAP output; exit 1 when a test failed.

local here = (arg and arg[0] or ""):match("^(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local R = require("bench_report")

local bench, scratch = arg[1], arg[2]
local port = os.getenv("RLK_REDIS_PORT")
if not bench or not scratch or not port then
    io.stderr:write("usage: RLK_REDIS_PORT=P test_async_smoke.lua RLK_BENCH SCRATCH_DIR\n")
    os.exit(2)
end

local T = require("bench_tap")
local test, check, q = T.test, T.check, T.q

-- Runs rlk-bench with args; returns its exit code and its JSON line (decoded), or fails.
local function run(name, args)
    local base = scratch .. "/" .. name
    local cmd = table.concat({ q(bench), args, "--host 127.0.0.1 --port", port,
                               "--key-prefix", q("async-smoke:" .. name),
                               ">" .. q(base .. ".out"), "2>" .. q(base .. ".err"),
                               "; echo $?" }, " ")
    local p = assert(io.popen(cmd, "r"))
    local rc = tonumber(p:read("*a"):match("%d+"))
    p:close()
    local f = io.open(base .. ".out", "r")
    local out = f and f:read("*a") or ""
    if f then f:close() end
    local e = io.open(base .. ".err", "r")
    local err = e and e:read("*a") or ""
    if e then e:close() end
    check(rc == 0, "%s: exit %s, stderr: %s", name, tostring(rc), err)
    local last = out:match("([^\n]*)\n?$")
    local ok, res = pcall(R.json_decode, last or "")
    check(ok and type(res) == "table", "%s: no JSON line: %s", name, out)
    return res
end

test("W1 --api async: pairs, no error", function()
    local r = run("w1", "--workload w1 --clients 4 --duration 1 --api async")
    check(r.api == "async" and r.w1_calls == "lock", "api %s, w1_calls %s", tostring(r.api),
          tostring(r.w1_calls))
    check(r.ops > 0, "no pair done")
    check(r.errors == 0, "errors %s: %s", tostring(r.errors), tostring(r.last_error))
    check(type(r.cpu_us_per_pair) == "number", "no cpu_us_per_pair")
end)

for _, mode in ipairs({ "", "--procs" }) do
    test("W2 --api async " .. (mode == "" and "(one thread)" or "--procs") ..
         ": handoffs, no overlap, none stuck", function()
        local r = run("w2" .. (mode == "" and "" or "p"),
                      "--workload w2 --clients 4 --duration 1 --grace 5 --api async " .. mode)
        check(r.acquisitions > 0, "no acquisition")
        check(r.overlaps == 0, "%d overlaps", r.overlaps)
        check(r.stuck_at_deadline == 0, "%d stuck", r.stuck_at_deadline)
        check(r.errors == 0 and r.giveups == 0, "errors %s, giveups %s: %s", tostring(r.errors),
              tostring(r.giveups), tostring(r.last_error))
    end)
end

for _, c in ipairs({ { 300, 30 }, { 300, 1 } }) do
    local n, m = c[1], c[2]
    test(string.format("pending --api async, %d requests on %d names: all pending, all served", n,
                       m), function()
        local r = run(string.format("pending-%d-%d", n, m),
                      string.format("--workload pending --requests %d --names %d --api async", n, m))
        check(r.served == n and r.failed == 0, "served %s of %d, failed %s: %s", tostring(r.served),
              n, tostring(r.failed), tostring(r.last_error))
        check(r.overlaps == 0, "%d overlaps", r.overlaps)
        check(r.pending_at_peak == n, "%s pending at the peak, not %d", tostring(r.pending_at_peak), n)
        check(r.fds - r.fds_before <= 2, "fds %d at the peak, %d before", r.fds, r.fds_before)
        check(type(r.rss_bytes_per_request) == "number", "no rss_bytes_per_request")
    end)
end

test("pending --api blocking, 50 requests on 5 names: all served", function()
    local r = run("pending-blocking", "--workload pending --requests 50 --names 5 --api blocking")
    check(r.served == 50 and r.failed == 0 and r.overlaps == 0, "served %s, failed %s, overlaps %s",
          tostring(r.served), tostring(r.failed), tostring(r.overlaps))
end)

T.finish("test_async_smoke")
