-- SPDX-License-Identifier: BSD-3-Clause
-- test_metrics_events: the library's metrics (rlk-bench --metrics-out) against an independent
-- record of the same run (--events-out: every acquisition stamped by rlk-bench around the
-- library's call). W2, 8 contender processes:
--   acquisitions:  sum of rlk_acquisitions_total{kind="lock",result="acquired"} == event lines
--   waits:         rlk_wait_seconds_count == event lines; every wait the library measured lies
--                  inside the call rlk-bench timed, so for every bucket bound le the library's
--                  cumulative count >= the events' count of waits <= le, and the library's
--                  wait sum <= the events' sum, short of it by at most 5% + 2 ms per acquisition
--   handoffs:      handoffs_received <= acquired_after_wait <= the events' handoffs (an
--                  acquisition that followed another contender's), and >= 1 on a contended run
--   exposition:    promtool check metrics accepts the file (process="<i>" labels)
-- A control run with --no-metrics must show the recorded fields at 0.
--
--   tools/with-redis luajit c/bench/test_metrics_events.lua RLK_BENCH SCRATCH_DIR
-- TAP output; exit 1 when a test failed.

local here = (arg and arg[0] or ""):match("^(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local R = require("bench_report")

local bench, scratch = arg[1], arg[2]
local port = os.getenv("RLK_REDIS_PORT")
if not bench or not scratch or not port then
    io.stderr:write("usage: RLK_REDIS_PORT=P test_metrics_events.lua RLK_BENCH SCRATCH_DIR\n")
    os.exit(2)
end

local CONTENDERS, DURATION_S = 8, 2
local T = require("bench_tap")
local test, check, q, read_file, sh = T.test, T.check, T.q, T.read_file, T.sh

-- Prometheus text: the sum over every sample of name whose labels contain each of want.
local function prom_sum(text, name, want)
    local total, seen = 0, false
    for line in text:gmatch("[^\n]+") do
        local n, labels, v = line:match("^([%w_]+){(.-)} (%S+)$")
        if not n then
            n, v = line:match("^([%w_]+) (%S+)$")
            labels = ""
        end
        if n == name then
            local ok = true
            for _, w in ipairs(want or {}) do
                if not labels:find(w, 1, true) then
                    ok = false
                end
            end
            if ok then
                total = total + tonumber(v)
                seen = true
            end
        end
    end
    return total, seen
end

local function run(base, extra)
    sh(table.concat({ q(bench), "--workload w2 --clients", CONTENDERS, "--procs --duration",
                      DURATION_S, "--grace 3 --host 127.0.0.1 --port", port, "--key-prefix",
                      q("mev-" .. base:match("[^/]*$")), "--events-out", q(base .. ".events"),
                      "--metrics-out", q(base .. ".prom"), extra or "",
                      ">" .. q(base .. ".out"), "2>" .. q(base .. ".err"), "; echo $? >",
                      q(base .. ".rc") }, " "))
    local rc = tonumber(read_file(base .. ".rc"):match("%-?%d+"))
    check(rc == 0, "rlk-bench exit %s: %s", tostring(rc), read_file(base .. ".err"))
    local ev = R.read_events(base .. ".events")
    check(ev and #ev > 0, "no events")
    local text = read_file(base .. ".prom")
    check(#text > 0, "no metrics file")
    return ev, text
end

local BOUNDS = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                 0.5, 1, 2.5, 5, 10, 30, 60 }

test("W2, 8 processes: the metrics equal the event log", function()
    local base = scratch .. "/on"
    local ev, text = run(base)
    local n = #ev
    local acquired = prom_sum(text, "rlk_acquisitions_total", { 'kind="lock"', 'result="acquired"' })
    check(acquired == n, "metrics: %d acquisitions, event log: %d", acquired, n)
    local other = prom_sum(text, "rlk_acquisitions_total", { 'result="error"' }) +
                  prom_sum(text, "rlk_acquisitions_total", { 'result="refused"' })
    check(other == 0, "%d acquisitions ended in an error or a refusal", other)
    local wcount = prom_sum(text, "rlk_wait_seconds_count")
    local wsum = prom_sum(text, "rlk_wait_seconds_sum")
    check(wcount == n, "rlk_wait_seconds_count %d, event log %d acquisitions", wcount, n)
    -- the event log's waits, sorted by acquisition for the handoffs
    table.sort(ev, function(a, b) return a[3] < b[3] end)
    local lsum, lhand = 0, 0
    local waits = {}
    for i, e in ipairs(ev) do
        local w = (e[3] - e[2]) / 1e9
        waits[#waits + 1] = w
        lsum = lsum + w
        if i > 1 and e[1] ~= ev[i - 1][1] then
            lhand = lhand + 1
        end
    end
    check(wsum <= lsum + 1e-6, "library wait sum %.6f s > the event log's %.6f s", wsum, lsum)
    check(lsum - wsum <= 0.05 * lsum + n * 0.002,
          "library wait sum %.6f s, event log %.6f s: more than 5%% + 2 ms per acquisition apart",
          wsum, lsum)
    for _, le in ipairs(BOUNDS) do
        local lib = prom_sum(text, "rlk_wait_seconds_bucket", { string.format('le="%g"', le) })
        local log = 0
        for _, w in ipairs(waits) do
            if w <= le then
                log = log + 1
            end
        end
        check(lib >= log, "bucket le=%g: library %d, event log %d waits at most that long", le,
              lib, log)
    end
    local hand = prom_sum(text, "rlk_handoffs_received_total")
    local after = prom_sum(text, "rlk_acquired_after_wait_total")
    check(hand <= after and after <= lhand,
          "handoffs %d, acquired after a wait %d, event log's handoffs %d: not in that order",
          hand, after, lhand)
    check(hand >= 1, "a contended run with no handoff")
    check(prom_sum(text, "rlk_handoff_latency_seconds_count") == hand, "handoff histogram count")
    local holds = prom_sum(text, "rlk_hold_seconds_count")
    check(holds == n, "rlk_hold_seconds_count %d, %d acquisitions (each released)", holds, n)
    for p = 0, CONTENDERS - 1 do
        local _, seen = prom_sum(text, "rlk_metrics_enabled", { string.format('process="%d"', p) })
        check(seen, "no snapshot of process %d", p)
    end
    print(string.format("# %d acquisitions, wait sum %.4f s (log %.4f s), handoffs %d "
                        .. "(after a wait %d, log %d)", n, wsum, lsum, hand, after, lhand))
end)

test("promtool check metrics accepts rlk-bench's exposition", function()
    if sh("command -v promtool") == "" then
        print("# SKIP promtool not found")
        return
    end
    local out = sh("promtool check metrics <" .. q(scratch .. "/on.prom") .. " 2>&1; echo rc=$?")
    check(out:match("rc=0"), "promtool: %s", out)
end)

test("control: --no-metrics records nothing of what it turns off", function()
    local ev, text = run(scratch .. "/off", "--no-metrics")
    check(#ev > 0, "no acquisitions")
    check(prom_sum(text, "rlk_acquisitions_total") == 0, "acquisitions recorded with it off")
    check(prom_sum(text, "rlk_wait_seconds_count") == 0, "waits recorded with it off")
    check(prom_sum(text, "rlk_metrics_enabled") == 0, "enabled with it off")
end)

T.finish()
