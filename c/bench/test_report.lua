-- SPDX-License-Identifier: BSD-3-Clause
-- test_report: the unit test of bench_report.lua (what tools/bench-run
-- prints), on fixed inputs: JSON, commandstats arithmetic, the overlap
-- re-check, the median, and whole reports over fixture run directories.
--
--   luajit c/bench/test_report.lua SCRATCH_DIR     (also under lua5.1)
-- TAP output; exit 1 when a test failed.

local here = (arg and arg[0] or ""):match("^(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local R = require("bench_report")

local scratch = arg and arg[1]
if not scratch then
    io.stderr:write("usage: test_report.lua SCRATCH_DIR\n")
    os.exit(2)
end

local T = require("bench_tap")
local test = T.test

local function eq(got, want, what)
    if got ~= want then
        error(string.format("%s: got %s, want %s", what or "value", tostring(got),
                            tostring(want)), 2)
    end
end

local function has(text, needle, what)
    if not text:find(needle, 1, true) then
        error(string.format("%s: %q not found in:\n%s", what or "text", needle, text), 2)
    end
end

local function write(path, text)
    local f = assert(io.open(path, "w"))
    f:write(text)
    f:close()
end

local function mkdir(path)
    os.execute("rm -rf '" .. path .. "' && mkdir -p '" .. path .. "'")
end

-- ------------------------------------------------------------------ JSON

test("json_decode: objects, arrays, numbers, null, escapes", function()
    local v = R.json_decode(' {"a": 1, "b": -2.5e3, "c": [true, false, null, "x"], ' ..
                            '"d": {"n": 0, "p50": null}, "s": "q\\"\\n\\u00b5\\/"} ')
    eq(v.a, 1, "a")
    eq(v.b, -2500, "b")
    eq(v.c[1], true, "c[1]")
    eq(v.c[2], false, "c[2]")
    eq(v.c[3], nil, "c[3] (null)")
    eq(v.c[4], "x", "c[4]")
    eq(v.d.n, 0, "d.n")
    eq(v.d.p50, nil, "d.p50 (null)")
    eq(v.s, 'q"\n\194\181/', "s")
end)

test("json_decode: malformed input raises", function()
    for _, bad in ipairs({ '{"a":1', '{"a" 1}', '[1,2', '"abc', '{"a":1} x', '{"a":tru}', '' }) do
        local ok = pcall(R.json_decode, bad)
        eq(ok, false, "decoding " .. bad)
    end
end)

test("json_encode: sorted keys, escapes, integers, fractions, round trip", function()
    local text = R.json_encode({ b = 2, a = "x\"\n\1", c = { 1, 2.5 }, d = { p = 0.1 } })
    eq(text, '{"a":"x\\"\\n\\u0001","b":2,"c":[1,2.5],"d":{"p":0.1}}', "encoding")
    local back = R.json_decode(text)
    eq(back.a, "x\"\n\1", "a back")
    eq(back.c[2], 2.5, "c[2] back")
    eq(R.json_encode(8415.752), "8415.752", "a 3-decimal time")
end)

-- ------------------------------------------------------------------ server work

local INFO_BEFORE = "# Commandstats\r\n" ..
    "cmdstat_info:calls=3,usec=48,usec_per_call=16.00,rejected_calls=0,failed_calls=0\r\n" ..
    "cmdstat_del:calls=4,usec=9,usec_per_call=2.25,rejected_calls=0,failed_calls=0\r\n" ..
    "cmdstat_evalsha:calls=100,usec=900,usec_per_call=9.00,rejected_calls=0,failed_calls=0\r\n"

local INFO_AFTER = "# Commandstats\r\n" ..
    "cmdstat_info:calls=4,usec=60,usec_per_call=15.00,rejected_calls=0,failed_calls=0\r\n" ..
    "cmdstat_del:calls=16,usec=30,usec_per_call=1.88,rejected_calls=0,failed_calls=0\r\n" ..
    "cmdstat_evalsha:calls=130,usec=1200,usec_per_call=9.23,rejected_calls=0,failed_calls=0\r\n" ..
    "cmdstat_subscribe:calls=10,usec=20,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n" ..
    "cmdstat_unsubscribe:calls=10,usec=20,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n" ..
    "cmdstat_ping:calls=1,usec=1,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n" ..
    "cmdstat_hincrby:calls=20,usec=20,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n" ..
    "cmdstat_publish:calls=10,usec=20,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n" ..
    "cmdstat_script|load:calls=40,usec=400,usec_per_call=10.00,rejected_calls=0," ..
    "failed_calls=0\r\n" ..
    "cmdstat_client|setname:calls=4,usec=4,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n"

test("parse_commandstats: calls per command, subcommands by their full name", function()
    local c = R.parse_commandstats(INFO_AFTER)
    eq(c.evalsha, 130, "evalsha")
    eq(c["script|load"], 40, "script|load")
    eq(c["client|setname"], 4, "client|setname")
    eq(c.ping, 1, "ping")
    eq(c.usec, nil, "no other fields")
end)

test("server_work: top-level vs inside scripts; setup DELs and chatter excluded", function()
    local w = R.server_work(R.parse_commandstats(INFO_BEFORE), R.parse_commandstats(INFO_AFTER), 2)
    -- evalsha 30 + subscribe 10 + unsubscribe 10 + ping 1 = 51 top-level;
    -- del 12 - 2 setup + hincrby 20 + publish 10 = 40 inside scripts.
    eq(w.top, 51, "top-level")
    eq(w.inner, 40, "inside scripts")
    eq(w.total, 91, "total")
    eq(w.calls.del, 10, "del without the setup's")
    eq(w.calls.info, nil, "info excluded")
    eq(w.calls["script|load"], nil, "script load excluded")
    eq(w.calls["client|setname"], nil, "client setname excluded")
end)

-- ------------------------------------------------------------------ events

test("count_overlaps: disjoint, touching, nested, unsorted", function()
    eq(R.count_overlaps({ { 0, 0, 10, 20 }, { 1, 5, 21, 30 }, { 0, 6, 31, 40 } }), 0, "disjoint")
    eq(R.count_overlaps({ { 0, 0, 10, 20 }, { 1, 5, 20, 30 } }), 1, "touching (closed intervals)")
    eq(R.count_overlaps({ { 0, 0, 10, 100 }, { 1, 5, 20, 30 }, { 2, 5, 40, 50 } }), 2, "nested")
    eq(R.count_overlaps({ { 2, 0, 40, 50 }, { 1, 0, 10, 20 }, { 0, 0, 15, 25 } }), 1, "unsorted")
    eq(R.count_overlaps({}), 0, "empty")
end)

test("read_events: records, and a malformed line refused", function()
    local path = scratch .. "/events.csv"
    write(path, "0,1,2,3\n1,4,5,6000000000\n")
    local ev = assert(R.read_events(path))
    eq(#ev, 2, "records")
    eq(ev[2][4], 6000000000, "release ns beyond 32 bits")
    write(path, "0,1,2,3\n1,4,5\n")
    local none, err = R.read_events(path)
    eq(none, nil, "malformed")
    has(err, ":2:", "the line is named")
end)

test("read_events: a header line is skipped and its start_ns returned", function()
    local path = scratch .. "/events-header.csv"
    write(path, "# peers-bench/1 events impl=rlk start_ns=5000000000: contender,...\n" ..
                "0,5000000001,5000000002,5000000003\n")
    local ev, err, start = R.read_events(path)
    eq(err, nil, "no error")
    eq(#ev, 1, "records")
    eq(start, 5000000000, "start_ns")
    write(path, "0,1,2,3\n")
    eq(select(3, R.read_events(path)), 0, "no header: start 0")
end)

test("median_runs: the run with the median rate; the last run when none succeeded", function()
    local function run(rate, variant)
        return { workload = "w2", clients = 2, variant = variant, result = { acq_per_s = rate } }
    end
    local picked = R.median_runs({ run(10, "rlk"), run(30, "rlk"), run(20, "rlk"),
                                   { workload = "w2", clients = 2, variant = "baseline", exit = 1 },
                                   { workload = "w2", clients = 2, variant = "baseline", exit = 3 } })
    eq(picked["w2/2/rlk"].result.acq_per_s, 20, "median of 3")
    eq(picked["w2/2/baseline"].exit, 3, "last failed run")
end)

-- ------------------------------------------------------------------ whole reports

local function summary(p50, p99)
    return string.format('{"n":10,"p50":%s,"p99":%s,"max":%s,"mean":%s}', p50, p99, p99, p50)
end

local function w1_json(rate)
    return string.format('{"schema":"peers-bench/1","workload":"w1","ops":%d,"ops_per_s":%s,' ..
                         '"pair_lat_us":%s,"errors":0,"last_error":null}',
                         rate * 2, rate, summary(150.5, 400))
end

local function w2_json(o)
    return string.format('{"schema":"peers-bench/1","workload":"w2","acquisitions":%d,' ..
        '"acq_per_s":%s,"handoffs_per_s":%s,"handoff_other_us":%s,"jain_fairness":%s,' ..
        '"overlaps":%d,"stuck_at_deadline":%d,"hold_us":%s,"wait_us":%s,' ..
        '"self_reacquire_frac":0,"errors":0}', o.acq, o.acq_per_s, o.handoffs, summary(o.p50, o.p99),
        o.jain, o.overlaps or 0, o.stuck or 0, summary(1060, o.hold_p99 or 1200),
        summary(5000, 9000))
end

local function stats_text(evalsha, sub, inner)
    return string.format("cmdstat_evalsha:calls=%d,usec=1\r\ncmdstat_subscribe:calls=%d,usec=1\r\n" ..
                         "cmdstat_unsubscribe:calls=%d,usec=1\r\ncmdstat_hincrby:calls=%d,usec=1\r\n",
                         evalsha, sub, sub, inner)
end

local function events_text(n, overlap)
    local lines = {}
    for i = 0, n - 1 do
        local a = i * 1000
        lines[#lines + 1] = string.format("%d,%d,%d,%d", i % 4, a - 500, a, a + 900)
    end
    if overlap then
        lines[#lines + 1] = "3,0,950,1100"
    end
    return table.concat(lines, "\n") .. "\n"
end

-- A run directory as tools/bench-run leaves it.
local function fixture(dir, runs)
    mkdir(dir)
    local tsv = {}
    for i, r in ipairs(runs) do
        local id = string.format("run%03d", i)
        tsv[#tsv + 1] = table.concat({ id, r.workload, r.clients, r.variant, r.rep or 0,
                                       r.exit or 0 }, "\t")
        write(dir .. "/" .. id .. ".out", r.out or "")
        write(dir .. "/" .. id .. ".err", r.err or "")
        write(dir .. "/" .. id .. ".before", "")
        write(dir .. "/" .. id .. ".after", r.after or "")
        if r.events then
            write(dir .. "/" .. id .. ".events", r.events)
        end
    end
    write(dir .. "/runs.tsv", table.concat(tsv, "\n") .. "\n")
end

local function report(dir, opts)
    local lines, warnings = {}, {}
    local rc = R.report(dir, opts, function(s) lines[#lines + 1] = s end,
                        function(s) warnings[#warnings + 1] = s end)
    return rc, table.concat(lines, "\n"), table.concat(warnings, "\n")
end

-- A result with one more field, as a newer rlk-bench reports it.
local function with_field(json, field, v)
    return (json:gsub("}$", string.format(',"%s":%s}', field, v)))
end

-- A W1 result with the client CPU per pair.
local function with_cpu(json, v)
    return with_field(json, "cpu_us_per_pair", v)
end

local GOOD_W2_32 = { acq = 2000, acq_per_s = 666.7, handoffs = 666.0, p50 = 180.4, p99 = 700,
                     jain = 0.9999 }

test("report: W1 ratio against its goal, W2 rows, commands per acquisition, goals met", function()
    local dir = scratch .. "/good"
    fixture(dir, {
        { workload = "w1", clients = 1, variant = "baseline", out = "noise\n" .. w1_json(1000),
          after = stats_text(2000 * 1, 0, 8000) },
        { workload = "w1", clients = 1, variant = "rlk", out = w1_json(960),
          after = stats_text(1920, 0, 7680) },
        { workload = "w2", clients = 32, variant = "rlk", out = w2_json(GOOD_W2_32),
          -- 2040 acquisitions recorded (40 after the deadline): 2040 x (3 EVALSHA + 1 + 1) top-level
          after = stats_text(3 * 2040, 2040, 2040 * 11), events = events_text(2040) },
    })
    local rc, text, warnings = report(dir, { w1 = "1", w2 = "32", hold_ms = "1", duration = "3" })
    eq(rc, 0, "exit")
    eq(warnings, "", "warnings")
    has(text, "| 1 | 960 | 1000 | 0.96 | met | 150.5 / 400.0 | 150.5 / 400.0 | " ..
              "5.00 (1.00) | 5.00 (1.00) | 0 / 0 |", "W1 row")
    has(text, "| 32 | rlk | 667 | 666 | 1.00 | 180.4 | 700.0 | 16.00 | 5.00 | 1.000 | 0 | 0 |",
        "W2 row: per acquisition over all 2040 recorded")
    has(text, "| | goal (rlk) | | | ≥ 0.90 at 32 | ≤ 250 at 32 | ≤ 2000 at 32 | | ≤ 6 | " ..
              "≥ 0.99 | 0 | 0 |", "goal row")
    has(text, "| W1 at 1: rlk ÷ baseline pairs/s | ≥ 0.95 | 0.96 | met |", "W1 goal")
    has(text, "| W2 at 32: handoff p50 µs | ≤ 250 | 180.4 | met |", "p50 goal")
    has(text, "| W2 at 32: top-level commands/acq | ≤ 6 | 5.00 | met |", "commands goal")
    has(text, "| W2 at 32: overlaps (re-checked from the events) | 0 | 0 | met |", "re-check")
    eq(text:find("MISSED", 1, true), nil, "nothing missed")
end)

test("report: threads and processes side by side, EVALSHA and round trips, fair goals",
     function()
    local dir = scratch .. "/modes"
    local o = { acq = 1000, acq_per_s = 500, handoffs = 475, p50 = 60, p99 = 300, jain = 0.995 }
    -- rlk's runs: 200 PINGs back to back and 100 after a hold (setup_pings counts both); the
    -- fair lock's an older bench's JSON, without the PINGs after a hold.
    local json = w2_json(o):gsub('}$', ',"rtt_us":' .. summary(20, 40) .. ',"rtt_after_hold_us":'
                                 .. summary(40, 90) .. ',"after_hold_pings":100,"setup_pings":300}')
    local old_json = w2_json(o):gsub('}$', ',"rtt_us":' .. summary(20, 40) .. ',"setup_pings":200}')
    local function stats(evalsha, inner, pings)
        return stats_text(evalsha, 0, inner) .. "cmdstat_ping:calls=" .. pings .. ",usec=1\r\n"
    end
    fixture(dir, {
        { workload = "w2", clients = 8, variant = "rlk", out = json,
          after = stats(3000, 12000, 300), events = events_text(1000) },
        { workload = "w2p", clients = 8, variant = "rlk", out = json,
          after = stats(2900, 14000, 300), events = events_text(1000) },
        { workload = "w2p", clients = 8, variant = "fair", out = old_json,
          after = stats(3500, 28000, 200), events = events_text(1000) },
    })
    local rc, text = report(dir, { w1 = "", w2 = "8", hold_ms = "1" })
    eq(rc, 0, "exit")
    has(text, "| handoff p50 µs (PINGs / PINGs after a hold) |", "the column names both PINGs")
    has(text, "| 8 | threads | rlk | 500 | 0.95 | 60.0 (3.0 / 1.5) | 300.0 | 3.00 | 15.00 | " ..
              "0.995 | 0 | 0 |", "threads row (every setup PING taken off, both kinds)")
    has(text, "| 8 | processes | rlk | 500 | 0.95 | 60.0 (3.0 / 1.5) | 300.0 | 2.90 | 16.90 |",
        "processes")
    has(text, "| 8 | processes | fair | 500 | 0.95 | 60.0 (3.0 / n/a) | 300.0 | 3.50 | 31.50 |",
        "an older JSON without the PINGs after a hold: n/a")
    has(text, "| W2 processes at 8: EVALSHA/acq | ≤ 3 | 2.90 | met |", "EVALSHA goal")
    has(text, "| W2 processes at 8: commands/acq | ≤ 20 | 16.90 | met |", "commands goal")
    has(text, "| W2 processes at 8: handoff p50 in round trips | ≤ 3 | 3.0 | met |", "rtt goal")
    has(text, "| W2 processes at 8: fair: commands/acq | ≤ 30 | 31.50 | MISSED |", "fair goal")
end)

test("report: every kind's handoffs beside the reentrant lock's", function()
    local dir = scratch .. "/kinds"
    local function json(p50, woken, messages)
        local o = { acq = 1000, acq_per_s = 500, handoffs = 500, p50 = p50, p99 = 3 * p50,
                    jain = 1 }
        return (w2_json(o):gsub('}$', ',"sub_wakeups_per_handoff":' .. woken ..
                                ',"sub_messages_per_acq":' .. messages .. '}'))
    end
    fixture(dir, {
        { workload = "w2p", clients = 8, variant = "rlk", out = json(400, 1.01, 1.02),
          after = stats_text(3000, 0, 13000), events = events_text(1000) },
        { workload = "w2p", clients = 8, variant = "rwlock-write", out = json(800, 13.5, 8.01),
          after = stats_text(5000, 0, 45000), events = events_text(1000) },
        { workload = "w2p", clients = 8, variant = "semaphore", out = json(1000, 9.25, 8),
          after = stats_text(4000, 0, 26000), events = events_text(1000, true) },
    })
    local rc, text = report(dir, { w1 = "", w2 = "8", hold_ms = "1" })
    eq(rc, 1, "exit: the semaphore's events hold an overlap")
    has(text, "| 8 | processes | rlk | 400.0 | 1.00 | 1200.0 | 500 | 1.00 | 1.01 | 1.02 | 16.00 | 0 | 0 |",
        "the reentrant lock's row")
    has(text, "| 8 | processes | rwlock-write | 800.0 | 2.00 | 2400.0 | 500 | 1.00 | 13.50 | 8.01 | " ..
              "50.00 | 0 | 0 |", "the write side: woken subscribers per handoff")
    has(text, "| 8 | processes | semaphore | 1000.0 | 2.50 | 3000.0 | 500 | 1.00 | 9.25 | 8.00 | " ..
              "29.97 | 0 (events: 1) | 0 |", "the semaphore: the overlap re-checked")
    has(text, "| 8 | processes | rwlock-write | 500 | 1.00 |", "its row in the modes table")
    has(text, "| 8 | processes | 16.00 | EVALSHA 3.00 | HINCRBY 13.00 |",
        "the reentrant lock's commands per acquisition, by command")
end)

test("report: the steps of a handoff beside both PINGs, n/a for an older JSON", function()
    local dir = scratch .. "/steps"
    local o = { acq = 1000, acq_per_s = 500, handoffs = 500, p50 = 200, p99 = 600, jain = 1 }
    local steps = ',"sub_wakeups_per_handoff":1.01,"sub_messages_per_acq":1.02' ..
        ',"release_to_message_us":' .. summary(70, 140) .. ',"message_to_woken_us":' ..
        summary(9, 20) .. ',"woken_to_claim_sent_us":' .. summary(2, 4) .. ',"claim_rtt_us":' ..
        summary(55, 90) .. ',"claim_to_return_us":' .. summary(6, 9) .. ',"release_rtt_us":' ..
        summary(100, 180) .. ',"handoff_us":' .. summary(140, 300) .. ',"rtt_us":' ..
        summary(45, 60) .. ',"setup_pings":'
    local new = w2_json(o):gsub('}$', steps .. '300,"rtt_after_hold_us":' .. summary(95, 130) ..
                                ',"after_hold_pings":100,"publish_after_hold_us":' ..
                                summary(110, 150) .. ',"setup_publishes":100}')
    local old = w2_json(o):gsub('}$', steps .. '200}')
    fixture(dir, {
        { workload = "w2", clients = 8, variant = "rlk", out = new,
          after = stats_text(3000, 0, 13000):gsub("subscribe:calls=0", "subscribe:calls=1", 1) ..
              "cmdstat_ping:calls=300,usec=1\r\ncmdstat_publish:calls=100,usec=1\r\n" ..
              "cmdstat_evalsha:calls=3000,usec=149996\r\n",
          events = events_text(1000) },
        { workload = "w2p", clients = 8, variant = "rlk", out = old,
          after = stats_text(3000, 0, 13000) .. "cmdstat_ping:calls=200,usec=1\r\n",
          events = events_text(1000) },
    })
    local rc, text = report(dir, { w1 = "", w2 = "8", hold_ms = "1" })
    eq(rc, 0, "exit")
    has(text, "| release round trip | release → acquired | PING | PING after a hold | " ..
              "PUBLISH after a hold → message | server µs ÷ acq |", "the step table's columns")
    has(text, "| 8 | threads | 1.01 | 1.02 | 70.0 | 9.0 | 2.0 | 55.0 | 6.0 | 100.0 | 140.0 | " ..
              "45.0 | 95.0 | 110.0 | 150.0 |",
        "the step row with both PINGs, the PUBLISH floor and the server's time per acquisition")
    has(text, "| 8 | processes | 1.01 | 1.02 | 70.0 | 9.0 | 2.0 | 55.0 | 6.0 | 100.0 | 140.0 | " ..
              "45.0 | n/a | n/a | 0.0 |", "an older JSON: n/a")
    has(text, "PING after a hold: p50 of PINGs each sent right after sleeping the hold",
        "the line under the step table says what each PING is")
    has(text, "| 8 | threads | rlk | 500 | 1.00 | 200.0 (4.4 / 2.1) |", "the modes row")
    has(text, "| 8 | processes | rlk | 500 | 1.00 | 200.0 (4.4 / n/a) |", "the older row")
    has(text, "| 8 | threads | 16.00 | EVALSHA 3.00 | HINCRBY 13.00 |",
        "commands per acquisition: the PINGs after a hold and the floor's PUBLISHes and "
        .. "SUBSCRIBE taken off")
end)

test("report: no kinds table without another kind", function()
    local dir = scratch .. "/nokinds"
    fixture(dir, {
        { workload = "w2", clients = 8, variant = "rlk", out = w2_json(GOOD_W2_32),
          after = stats_text(30, 10, 50), events = events_text(10) },
    })
    local _, text = report(dir, { w1 = "", w2 = "8", hold_ms = "1" })
    eq(text:find("handoffs of every kind", 1, true), nil, "no table")
end)

test("report: goals missed, missing baseline, a disturbed run", function()
    local dir = scratch .. "/missed"
    fixture(dir, {
        { workload = "w1", clients = 8, variant = "rlk", out = w1_json(700) },
        { workload = "w1", clients = 8, variant = "baseline", out = w1_json(1000) },
        { workload = "w2", clients = 32, variant = "rlk",
          out = w2_json({ acq = 100, acq_per_s = 50, handoffs = 40, p50 = 300, p99 = 2500,
                          jain = 0.9, stuck = 2, hold_p99 = 9000 }),
          after = stats_text(700, 100, 900), events = events_text(100) },
    })
    local rc, text = report(dir, { w1 = "8", w2 = "2,32", hold_ms = "1" })
    eq(rc, 0, "exit (missed goals and stuck waiters are results, not failures)")
    has(text, "| 8 | 700 | 1000 | 0.70 | MISSED |", "W1 row")
    has(text, "| 32 | rlk | 50 (disturbed) | 40 | 0.80 | 300.0 | 2500.0 |", "W2 row")
    has(text, "| W2 at 32: handoffs/s ÷ acq/s | ≥ 0.90 | 0.80 | MISSED |", "handoff goal")
    has(text, "| W2 at 32: handoff p99 µs | ≤ 2000 | 2500.0 | MISSED |", "p99 goal")
    has(text, "| W2 at 32: top-level commands/acq | ≤ 6 | 9.00 | MISSED |", "commands goal")
    has(text, "| W2 at 32: Jain fairness | ≥ 0.99 | 0.900 | MISSED |", "Jain goal")
    has(text, "| W2 at 32: stuck | 0 | 2 | MISSED |", "stuck goal")
    has(text, "| W2 at 2: Jain fairness | ≥ 0.99 | n/a | n/a |", "a size not run")
end)

-- INFO commandstats after a W1 run: {command, calls, usec} triples.
local function usec_text(...)
    local lines = {}
    for _, c in ipairs({ ... }) do
        lines[#lines + 1] = string.format("cmdstat_%s:calls=%d,usec=%d\r\n", c[1], c[2], c[3])
    end
    return table.concat(lines)
end

test("report: server µs per pair against SET NX PX and Redisson's scripts", function()
    local dir = scratch .. "/server_us"
    -- w1_json(1000): 2000 pairs per run.
    fixture(dir, {
        { workload = "w1", clients = 1, variant = "baseline", out = w1_json(1000),
          after = usec_text({ "evalsha", 4000, 5000 }, { "hincrby", 4000, 900 }) },
        { workload = "w1", clients = 1, variant = "rlk", out = w1_json(1000),
          after = usec_text({ "evalsha", 4000, 6000 }, { "pttl", 2000, 300 }) },
        { workload = "w1", clients = 1, variant = "setnx", out = w1_json(1000),
          after = usec_text({ "set", 2000, 1000 }, { "evalsha", 2000, 1000 }) },
        { workload = "w1", clients = 1, variant = "redisson", out = w1_json(1000),
          after = usec_text({ "evalsha", 4000, 4000 }, { "exists", 2000, 100 }) },
        -- 8: no redisson run; 32: redisson not built (exit 2), 64: no setnx run.
        { workload = "w1", clients = 8, variant = "rlk", out = w1_json(1000),
          after = usec_text({ "evalsha", 4000, 3000 }) },
        { workload = "w1", clients = 8, variant = "setnx", out = w1_json(1000),
          after = usec_text({ "set", 2000, 1000 }, { "evalsha", 2000, 1000 }) },
        { workload = "w1", clients = 32, variant = "rlk", out = w1_json(1000),
          after = usec_text({ "evalsha", 4000, 3000 }) },
        { workload = "w1", clients = 32, variant = "setnx", out = w1_json(1000),
          after = usec_text({ "set", 2000, 1000 }, { "evalsha", 2000, 1000 }) },
        { workload = "w1", clients = 32, variant = "redisson", exit = 2,
          err = "rlk-bench: cannot open c/bench/redisson/reentrant/acquire.lua\n" },
        { workload = "w1", clients = 64, variant = "rlk", out = w1_json(1000),
          after = usec_text({ "evalsha", 4000, 6000 }) },
        { workload = "w1", clients = 64, variant = "redisson", out = w1_json(1000),
          after = usec_text({ "evalsha", 4000, 5000 }) },
    })
    local rc, text = report(dir, { w1 = "1,8,32,64", w2 = "", hold_ms = "1" })
    eq(rc, 0, "exit")
    has(text, "| clients | rlk µs/pair | rlk scripts by raw EVALSHA µs/pair | SET NX PX + " ..
              "compare-and-delete µs/pair | rlk ÷ SET NX PX | goal ≤ 2.0 | " ..
              "Redisson's scripts µs/pair | rlk ÷ Redisson's |", "header")
    has(text, "| 1 | 3.00 | 2.50 | 1.00 | 3.00 | MISSED | 2.00 | 1.50 |",
        "row 1: top-level and SET µs only, over the pairs")
    has(text, "| 8 | 1.50 | n/a | 1.00 | 1.50 | met | n/a | n/a |", "row 8: no redisson run")
    has(text, "| 32 | 1.50 | n/a | 1.00 | 1.50 | met | n/a | n/a |", "row 32: redisson not built")
    has(text, "| 64 | 3.00 | n/a | n/a | n/a | n/a | 2.50 | 1.20 |", "row 64: no setnx run")
    has(text, "| W1 at 1: server µs/pair ÷ SET NX PX lock's | ≤ 2.0 | 3.00 | MISSED |", "goal 1")
    has(text, "| W1 at 8: server µs/pair ÷ SET NX PX lock's | ≤ 2.0 | 1.50 | met |", "goal 8")
    eq(text:find("W1 at 64: server", 1, true), nil, "no goal without the setnx cell")
end)

test("report: the async API beside the blocking one, its goals met and missed", function()
    local dir = scratch .. "/async"
    fixture(dir, {
        { workload = "w1", clients = 8, variant = "rlk", out = with_field(w1_json(1000), "cpu_us_per_pair", 60) },
        { workload = "w1", clients = 8, variant = "rlk-lockw1",
          out = with_field(w1_json(900), "cpu_us_per_pair", 80) },
        { workload = "w1", clients = 8, variant = "rlk-async",
          out = with_field(w1_json(880), "cpu_us_per_pair", 20) },
        { workload = "w2", clients = 32, variant = "rlk",
          out = with_field(w2_json(GOOD_W2_32), "cpu_us_per_handoff", 400), events = events_text(20) },
        { workload = "w2", clients = 32, variant = "rlk-async",
          out = with_field(w2_json({ acq = 2100, acq_per_s = 700, handoffs = 700, p50 = 150, p99 = 900,
                                   jain = 1 }), "cpu_us_per_handoff", 250), events = events_text(20) },
    })
    local rc, text = report(dir, { w1 = "8", w2 = "32", hold_ms = "1", duration = "3" })
    eq(rc, 0, "exit")
    has(text, "### The non-blocking API beside the blocking one (rlk-async)", "heading")
    -- W1 divides by the blocking lock calls (rlk-lockw1), not by rlk_evalv (rlk)
    has(text, "| W1 pairs/s (blocking: rlk-lockw1) | 8 | 900 | 880 | 0.98 | 150.5 / 400.0 | " ..
              "150.5 / 400.0 | | 80.0 / 20.0 |", "W1 row")
    has(text, "| W2 threads acq/s | 32 | 667 | 700 | 1.05 | 180.4 / 700.0 | 150.0 / 900.0 | 1.00 | " ..
              "400.0 / 250.0 |", "W2 row")
    has(text, "| W1 at 8: async ÷ blocking pairs/s | ≥ 0.95 | 0.98 | met |", "W1 goal")
    has(text, "| W2 threads at 32: async handoff p50 µs (≤ blocking's) | ≤ 180.4 | 150.0 | met |",
        "p50 goal")
    has(text, "| W2 threads at 32: async handoff p99 µs (≤ blocking's) | ≤ 700.0 | 900.0 | MISSED |",
        "p99 goal")
    has(text, "| W2 threads at 32: async handoffs ÷ acq | ≥ 0.90 | 1.00 | met |", "handoff goal")
    -- no rlk-async run: no table
    local dir2 = scratch .. "/no-async"
    fixture(dir2, { { workload = "w1", clients = 8, variant = "rlk", out = w1_json(1000) } })
    local _, text2 = report(dir2, { w1 = "8", w2 = "", hold_ms = "1", duration = "3" })
    eq(text2:find("rlk-async", 1, true), nil, "no async table without the variant")
end)

test("report: the lock calls beside raw hiredis, pairs/s and client CPU per pair", function()
    local dir = scratch .. "/calls"
    fixture(dir, {
        { workload = "w1", clients = 8, variant = "baseline", out = with_cpu(w1_json(1000), 20) },
        { workload = "w1", clients = 8, variant = "rlk", out = with_cpu(w1_json(950), 22) },
        { workload = "w1", clients = 8, variant = "rlk-lockw1", out = with_cpu(w1_json(960), 23) },
        { workload = "w1", clients = 8, variant = "rlk-lockw1-wd", out = with_cpu(w1_json(700), 40) },
        { workload = "w1", clients = 8, variant = "rlk-async", out = with_cpu(w1_json(1100), 15) },
    })
    local rc, text = report(dir, { w1 = "8", w2 = "", hold_ms = "1", duration = "3" })
    eq(rc, 0, "exit")
    has(text, "### W1: the lock calls beside raw hiredis (pairs/s and client CPU per pair)",
        "heading")
    has(text, "| 8 | 1000 (20.0) | 950 (22.0) | 0.95, 1.10 | 960 (23.0) | 0.96, 1.15 | " ..
              "700 (40.0) | 0.70, 2.00 | 1100 (15.0) | 1.10, 0.75 |", "row")
    has(text, "| W1 at 8: lock calls, fixed lease ÷ raw pairs/s | ≥ 0.95 | 0.96 | met |",
        "fixed goal")
    has(text, "| W1 at 8: lock calls, fixed lease client CPU/pair ÷ raw | ≤ 1.2 | 1.15 | met |",
        "fixed CPU goal")
    has(text, "| W1 at 8: lock calls, watchdog lease ÷ raw pairs/s | ≥ 0.95 | 0.70 | MISSED |",
        "watchdog goal")
    has(text, "| W1 at 8: lock calls, watchdog lease client CPU/pair ÷ raw | ≤ 1.2 | 2.00 | MISSED |",
        "watchdog CPU goal")
    -- rlk_evalv alone (the old default): no such table
    local dir2 = scratch .. "/calls-none"
    fixture(dir2, { { workload = "w1", clients = 8, variant = "rlk", out = w1_json(1000) },
                    { workload = "w1", clients = 8, variant = "baseline", out = w1_json(1000) } })
    local _, text2 = report(dir2, { w1 = "8", w2 = "", hold_ms = "1", duration = "3" })
    eq(text2:find("the lock calls beside raw hiredis", 1, true), nil, "no table without lock calls")
end)

test("report: TLS beside plain TCP, and rlk over TLS against raw hiredis over TLS", function()
    local dir = scratch .. "/tls"
    fixture(dir, {
        { workload = "w1", clients = 1, variant = "rlk", out = w1_json(1000) },
        { workload = "w1", clients = 1, variant = "baseline", out = w1_json(1100) },
        { workload = "w1", clients = 1, variant = "rlk-tls", out = w1_json(850) },
        { workload = "w1", clients = 1, variant = "baseline-tls", out = w1_json(880) },
        { workload = "w1", clients = 8, variant = "rlk", out = w1_json(4000) },
        { workload = "w1", clients = 8, variant = "baseline", out = w1_json(4000) },
        { workload = "w1", clients = 8, variant = "rlk-tls", out = w1_json(3000) },
        { workload = "w1", clients = 8, variant = "baseline-tls", out = w1_json(3400) },
    })
    local rc, text = report(dir, { w1 = "1,8", w2 = "", hold_ms = "1", duration = "3" })
    eq(rc, 0, "exit")
    has(text, "| W1 pairs/s | 1 | rlk | 1000 | 850 | 0.85 | | |", "rlk row")
    has(text, "| W1 pairs/s | 8 | baseline | 4000 | 3400 | 0.85 | | |", "baseline row")
    has(text, "| W1 at 1: rlk over TLS ÷ over TCP pairs/s | ≥ 0.80 | 0.85 | met |", "TCP goal")
    has(text, "| W1 at 1: rlk over TLS ÷ raw hiredis over TLS pairs/s | ≥ 0.95 | 0.97 | met |",
        "raw goal met")
    has(text, "| W1 at 8: rlk over TLS ÷ raw hiredis over TLS pairs/s | ≥ 0.95 | 0.88 | MISSED |",
        "raw goal missed")
    -- rlk over TLS without the raw one: no such goal
    local dir2 = scratch .. "/tls-alone"
    fixture(dir2, { { workload = "w1", clients = 1, variant = "rlk", out = w1_json(1000) },
                    { workload = "w1", clients = 1, variant = "rlk-tls", out = w1_json(850) } })
    local _, text2 = report(dir2, { w1 = "1", w2 = "", hold_ms = "1", duration = "3" })
    has(text2, "| W1 at 1: rlk over TLS ÷ over TCP pairs/s | ≥ 0.80 | 0.85 | met |", "TCP goal alone")
    eq(text2:find("raw hiredis over TLS", 1, true), nil, "no raw goal without baseline-tls")
end)

test("report: each kind's W1 lock calls beside raw hiredis, server time and commands", function()
    local dir = scratch .. "/kinds-w1"
    local function stats(usec, calls, inner)
        return string.format("cmdstat_evalsha:calls=%d,usec=%d\r\ncmdstat_hget:calls=%d,usec=1\r\n",
                             calls, usec, inner)
    end
    fixture(dir, {
        { workload = "w1", clients = 8, variant = "baseline", out = with_cpu(w1_json(1000), 20),
          after = stats(2000 * 10, 2 * 2000, 7 * 2000) },
        { workload = "w1", clients = 8, variant = "rlk-lockw1", out = with_cpu(w1_json(900), 24),
          after = stats(1800 * 12, 2 * 1800, 7 * 1800) },
        { workload = "w1", clients = 8, variant = "semaphore", out = with_cpu(w1_json(500), 30),
          after = stats(1000 * 40, 2 * 1000, 14 * 1000) },
    })
    local rc, text = report(dir, { w1 = "8", w2 = "", hold_ms = "1", duration = "3" })
    eq(rc, 0, "exit")
    has(text, "### W1: each kind's lock calls beside raw hiredis", "heading")
    has(text, "| 8 | raw hiredis (reentrant scripts) | 1000 | 1.00 | 20.0 (1.00) | 10.0 | 9.00 (2.00) | 0 |",
        "raw row")
    has(text, "| 8 | reentrant | 900 | 0.90 | 24.0 (1.20) | 12.0 | 9.00 (2.00) | 0 |", "reentrant row")
    has(text, "| 8 | semaphore | 500 | 0.50 | 30.0 (1.50) | 40.0 | 16.00 (2.00) | 0 |", "semaphore row")
    eq(text:find("W1 at 8: semaphore", 1, true), nil, "no goal row for a kind")
    -- the reentrant lock's calls alone: no such table
    local dir2 = scratch .. "/kinds-w1-none"
    fixture(dir2, { { workload = "w1", clients = 8, variant = "baseline", out = w1_json(1000) },
                    { workload = "w1", clients = 8, variant = "rlk-lockw1", out = w1_json(900) } })
    local _, text2 = report(dir2, { w1 = "8", w2 = "", hold_ms = "1", duration = "3" })
    eq(text2:find("each kind's lock calls", 1, true), nil, "no kinds table without another kind")
end)

test("report: an overlap in the events fails the run even when rlk-bench saw none", function()
    local dir = scratch .. "/overlap"
    fixture(dir, {
        { workload = "w2", clients = 32, variant = "rlk", out = w2_json(GOOD_W2_32),
          after = stats_text(10, 1, 10), events = events_text(50, true) },
    })
    local rc, text, warnings = report(dir, { w1 = "", w2 = "32", hold_ms = "1" })
    eq(rc, 1, "exit")
    has(warnings, "MUTUAL EXCLUSION VIOLATED in w2 32 rlk #1: 0 overlaps (events re-check: 1)",
        "warning")
    has(text, "| 0 (events: 1) |", "overlap cell")
    has(text, "| W2 at 32: overlaps (re-checked from the events) | 0 | 1 | MISSED |", "goal")
end)

test("report: a variant not built is n/a; a failed run fails the report", function()
    local dir = scratch .. "/failed"
    fixture(dir, {
        { workload = "w2", clients = 2, variant = "rlk", exit = 2,
          err = "rlk-bench: W2 needs the lock runtime (not built yet)\n" },
        { workload = "w2", clients = 2, variant = "baseline", exit = 1,
          err = "rlk-bench: connect to 127.0.0.1:1: Connection refused\n" },
    })
    local rc, text, warnings = report(dir, { w1 = "", w2 = "2", hold_ms = "1" })
    has(text, "| 2 | rlk | n/a: W2 needs the lock runtime (not built yet) |", "not built")
    has(text, "| 2 | baseline | n/a: connect to 127.0.0.1:1: Connection refused |", "failed")
    eq(rc, 1, "exit")
    has(warnings, "w2 2 baseline #1 failed: rlk-bench: connect to", "warning")
    eq(warnings:find("w2 2 rlk", 1, true), nil, "no warning for the variant not built")
end)

test("report: --json-out keeps every run with its server work", function()
    local dir = scratch .. "/json"
    local out = scratch .. "/runs.jsonl"
    fixture(dir, {
        { workload = "w2", clients = 32, variant = "rlk", out = w2_json(GOOD_W2_32),
          after = stats_text(30, 10, 50), events = events_text(10) },
        { workload = "w2", clients = 32, variant = "rlk", rep = 1, out = w2_json(GOOD_W2_32),
          after = stats_text(30, 10, 50), events = events_text(10) },
    })
    report(dir, { w2 = "32", hold_ms = "1", json_out = out, ["repeat"] = "2" })
    local f = assert(io.open(out, "r"))
    local n = 0
    for line in f:lines() do
        n = n + 1
        local rec = R.json_decode(line)
        eq(rec.commands_top, 50, "top-level")
        eq(rec.commands_total, 100, "total")
        eq(rec.acquisitions_all, 10, "acquisitions recorded")
        eq(rec.overlaps_recheck, 0, "re-check")
        eq(rec.result.jain_fairness, 0.9999, "the run's own result")
        eq(rec["repeat"], n - 1, "repeat")
    end
    f:close()
    eq(n, 2, "records")
end)

T.finish()
