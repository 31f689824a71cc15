-- SPDX-License-Identifier: BSD-3-Clause
-- test_w2_smoke: rlk-bench's W2 against a real redis-server, as behaviour
-- (no speed is asserted): a short contended run of each variant records
-- consistent acquisitions with no overlap and no stuck waiter; and with the
-- lock held by a foreign owner mid-run, every contender is reported stuck
-- at deadline + grace and the program still ends on its own.
--
--   tools/with-redis luajit c/bench/test_w2_smoke.lua RLK_BENCH SCRATCH_DIR HAVE_RLK
-- (with-redis sets RLK_REDIS_PORT.) HAVE_RLK: 1 when the build has the rlk
-- variant, 0 for a baseline-only build. TAP output; exit 1 when a test failed.

local here = (arg and arg[0] or ""):match("^(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local R = require("bench_report")

local bench, scratch, have_rlk = arg[1], arg[2], arg[3] == "1"
local port = os.getenv("RLK_REDIS_PORT")
if not bench or not scratch or not port then
    io.stderr:write("usage: RLK_REDIS_PORT=P test_w2_smoke.lua RLK_BENCH SCRATCH_DIR HAVE_RLK\n")
    os.exit(2)
end

local CONTENDERS, DURATION_S, GRACE_S = 4, 1, 1.5
-- The stuck-waiter run lasts longer: the foreign owner must take the key before the run's
-- deadline, and on a loaded machine the shell loop that takes it can need more than a second.
local STUCK_DURATION_S = 4

local T = require("bench_tap")
local test, check, q, read_file, sh = T.test, T.check, T.q, T.read_file, T.sh

local function bench_cmd(variant, prefix, events, duration_s)
    return table.concat({ q(bench), "--workload w2 --clients", CONTENDERS, "--duration",
                          duration_s or DURATION_S,
                          "--grace", GRACE_S, "--host 127.0.0.1 --port", port,
                          "--key-prefix", q(prefix),
                          variant:match("^baseline") and "--baseline" or "",
                          variant:match("procs$") and "--procs" or "",
                          variant:match("^fair") and "--lock fair" or "",
                          (variant:match("^rwlock%-write") or variant:match("^p?semaphore")) and
                              "--lock " .. variant:gsub("%-procs$", "") or "",
                          "--events-out", q(events) }, " ")
end

-- The run's exit code, its JSON (decoded: the last line of its stdout; nil when that is not
-- JSON) and its stderr.
local function outcome(base)
    local rc = tonumber(read_file(base .. ".rc"):match("%-?%d+"))
    local last
    for line in read_file(base .. ".out"):gmatch("[^\n]+") do
        last = line
    end
    local ok, result = pcall(R.json_decode, last or "")
    return rc, ok and result or nil, read_file(base .. ".err")
end

-- outcome(), and the run's events.
local function collect(base)
    local rc, result, err = outcome(base)
    local ev, _, start = R.read_events(base .. ".events")
    return rc, result, err, ev, start
end

local function check_common(rc, r, err)
    check(rc == 0, "exit %s, stderr: %s", tostring(rc), err)
    check(r ~= nil, "no JSON result on the last line of stdout; stderr: %s", err)
    check(r.schema == "peers-bench/1" and r.workload == "w2", "schema/workload")
    check(r.contenders == CONTENDERS, "contenders %s", tostring(r.contenders))
    check(r.overlaps == 0, "rlk-bench reports %s overlaps", tostring(r.overlaps))
    check(r.errors == 0 and r.giveups == 0, "errors %s, giveups %s (%s)", tostring(r.errors),
          tostring(r.giveups), tostring(r.last_error))
end

local function check_events(r, ev, start)
    check(ev ~= nil, "no events file")
    check(start and start > 0, "no start_ns in the events file's header line")
    local deadline_ns, before, seen = start + DURATION_S * 1e9, 0, {}
    for _, e in ipairs(ev) do
        check(e[2] <= e[3] and e[3] <= e[4], "record out of order: %d,%d,%d,%d", e[1], e[2], e[3],
              e[4])
        check(e[4] - e[3] >= 1e6, "hold shorter than --hold-ms 1: %d ns", e[4] - e[3])
        check(e[1] >= 0 and e[1] < CONTENDERS, "contender %d", e[1])
        seen[e[1]] = true
        if e[3] <= deadline_ns then
            before = before + 1
        end
    end
    check(before == r.acquisitions, "%d records acquired by the deadline, JSON says %s", before,
          tostring(r.acquisitions))
    for c = 0, CONTENDERS - 1 do
        check(seen[c], "contender %d never acquired", c)
    end
    check(R.count_overlaps(ev) == 0, "the events overlap")
end

-- The two round trips a W2 run is read against: PINGs back to back (rtt_us) and PINGs each
-- sent right after sleeping the hold (rtt_after_hold_us), as a release is sent; setup_pings
-- counts both, so that the report takes them all off the run's commands.
local function check_pings(r)
    local hot, held = r.rtt_us, r.rtt_after_hold_us
    check(type(hot) == "table" and hot.n == 200 and (hot.p50 or 0) > 0, "rtt_us %s",
          R.json_encode(hot))
    check(type(held) == "table" and (held.p50 or 0) > 0, "rtt_after_hold_us %s",
          R.json_encode(held))
    check(type(r.after_hold_pings) == "number" and r.after_hold_pings > 0 and
          held.n == r.after_hold_pings, "after_hold_pings %s, rtt_after_hold_us.n %s",
          tostring(r.after_hold_pings), tostring(held.n))
    check(r.setup_pings == hot.n + held.n, "setup_pings %s, want %d + %d",
          tostring(r.setup_pings), hot.n, held.n)
    -- The floor of release -> message: as many PUBLISHes after a hold, each to its message.
    local pub = r.publish_after_hold_us
    check(type(pub) == "table" and (pub.p50 or 0) > 0 and pub.n == held.n and
          r.setup_publishes == pub.n, "publish_after_hold_us %s, setup_publishes %s",
          R.json_encode(pub), tostring(r.setup_publishes))
end

local variants = { "baseline", "baseline-procs" }
if have_rlk then
    table.insert(variants, 1, "rlk")
    table.insert(variants, 2, "rlk-procs")
    table.insert(variants, 3, "fair-procs")
end

for _, variant in ipairs(variants) do
    test(variant .. ": a contended run records consistent acquisitions, no overlap, none stuck",
         function()
        local base = scratch .. "/smoke-" .. variant
        sh(bench_cmd(variant, "smoke-" .. variant, base .. ".events") .. " >" .. q(base .. ".out")
           .. " 2>" .. q(base .. ".err") .. "; echo $? >" .. q(base .. ".rc"))
        local rc, r, err, ev, start = collect(base)
        check_common(rc, r, err)
        check(r.acquisitions > 0, "no acquisition")
        check(r.stuck_at_deadline == 0, "%s stuck", tostring(r.stuck_at_deadline))
        check(r.lib == (variant:match("^baseline") and "hiredis" or "rlk"), "lib %s",
              tostring(r.lib))
        check(r.mode == (variant:match("procs$") and "processes" or "threads"), "mode %s",
              tostring(r.mode))
        check_events(r, ev, start)
        check_pings(r)
        if variant:match("^rlk") then
            -- The step table (release -> message -> woken -> claim -> return) reads every handoff
            -- a message woke: held grants too, which reach a thread first in the queue while it
            -- sleeps on the lock's channel, not on the wake channel the grant comes by.
            local handoffs = r.handoff_other_us and r.handoff_other_us.n or 0
            check(handoffs > 0 and (r.timeline_handoffs or 0) * 2 >= handoffs,
                  "the timeline has %s of %d handoffs", tostring(r.timeline_handoffs), handoffs)
        end
    end)

    test(variant .. ": waiters blocked by a foreign holder are stuck at deadline + grace",
         function()
        local base = scratch .. "/stuck-" .. variant
        local key = "stuck-" .. variant .. ":w2"
        -- Once the run has taken the key (its setup DEL is behind us), wait for a
        -- moment it is free and take it for a foreign owner (bounded tries).
        local take = "if redis.call('exists', KEYS[1]) == 0 then " ..
                     "redis.call('hset', KEYS[1], 'foreign:1', 1); " ..
                     "redis.call('pexpire', KEYS[1], 60000); return 1 end return 0"
        local script = table.concat({
            "t0=$(date +%s%N)",
            bench_cmd(variant, "stuck-" .. variant, base .. ".events", STUCK_DURATION_S) .. " >"
                .. q(base .. ".out")
                .. " 2>" .. q(base .. ".err") .. " & b=$!",
            "cli() { redis-cli -h 127.0.0.1 -p " .. port .. " \"$@\"; }",
            "for i in $(seq 2000); do [ \"$(cli exists " .. q(key) .. ")\" = 1 ] && break; done",
            "taken=0",
            "for i in $(seq 5000); do [ \"$(cli eval " .. q(take) .. " 1 " .. q(key) ..
                ")\" = 1 ] && { taken=1; break; }; done",
            "echo \"foreign_at=$(( ($(date +%s%N) - t0) / 1000000 ))\"",
            "wait $b; echo $? >" .. q(base .. ".rc"),
            "echo \"taken=$taken ms=$(( ($(date +%s%N) - t0) / 1000000 ))\"",
        }, "\n")
        -- The foreign owner must take the key before the run's deadline; on a stalled machine
        -- (the run's processes and the redis-cli loop starting late) it may come after it, and
        -- then the scene did not happen: run again (3 runs at most), the key freed first.
        local out, taken_ms
        for run = 1, 3 do
            out = sh(script)
            taken_ms = tonumber(out:match("foreign_at=(%d+)"))
            if not (out:match("taken=1") and taken_ms and taken_ms >= STUCK_DURATION_S * 1000)
                or run == 3 then
                break
            end
            io.write(("# run %d: the foreign owner took the key %d ms after the start, after "
                      .. "the run's deadline (a stalled machine): again\n"):format(run, taken_ms))
            sh("redis-cli -h 127.0.0.1 -p " .. port .. " del " .. q(key))
        end
        check(out:match("taken=1"), "could not take the key for a foreign owner: %s", out)
        check(taken_ms and taken_ms < STUCK_DURATION_S * 1000, "the foreign owner took the key "
              .. "%s ms after the start, after the run's deadline (a stalled machine, 3 runs)",
              tostring(taken_ms))
        local rc, r, err, ev = collect(base)
        check_common(rc, r, err)
        check(r.stuck_at_deadline == CONTENDERS, "stuck %s, want %d; stderr: %s",
              tostring(r.stuck_at_deadline), CONTENDERS, err)
        check(err:find(CONTENDERS .. " contender(s) still waiting", 1, true), "stderr: %s", err)
        check(ev ~= nil and R.count_overlaps(ev) == 0, "the events overlap")
        -- It ended by itself, about grace after the deadline (a generous bound
        -- for a loaded machine: a hang would take minutes).
        local ms = tonumber(out:match("ms=(%d+)"))
        check(ms and ms >= (STUCK_DURATION_S + GRACE_S) * 1000 - 50, "ended after %s ms, before "
              .. "deadline + grace", tostring(ms))
        check(ms < (STUCK_DURATION_S + GRACE_S) * 1000 + 20000, "took %s ms", tostring(ms))
        local left = sh("redis-cli -h 127.0.0.1 -p " .. port .. " exists " .. q(key))
        check(left:match("^0"), "rlk-bench left its key behind: %s", left)
    end)
end

-- The other kinds: the read-write lock's write side and the semaphores of 1 permit,
-- used as a mutex; the same records, no overlap, none stuck.
local kinds = have_rlk and { "rwlock-write", "semaphore-procs", "psemaphore" } or {}
for _, variant in ipairs(kinds) do
    test(variant .. ": a contended run records consistent acquisitions, no overlap, none stuck",
         function()
        local base = scratch .. "/smoke-" .. variant
        sh(bench_cmd(variant, "smoke-" .. variant, base .. ".events") .. " >" .. q(base .. ".out")
           .. " 2>" .. q(base .. ".err") .. "; echo $? >" .. q(base .. ".rc"))
        local rc, r, err, ev, start = collect(base)
        check_common(rc, r, err)
        check(r.lock == variant:gsub("%-procs$", ""), "lock %s", tostring(r.lock))
        check(r.acquisitions > 0, "no acquisition")
        check(r.stuck_at_deadline == 0, "%s stuck", tostring(r.stuck_at_deadline))
        check(r.mode == (variant:match("procs$") and "processes" or "threads"), "mode %s",
              tostring(r.mode))
        check_events(r, ev, start)
    end)
end

test("baseline: every PING the server ran is a setup PING (setup_pings)", function()
    local base = scratch .. "/pings-baseline"
    local function pings()
        local info = sh("redis-cli -h 127.0.0.1 -p " .. port .. " info commandstats")
        local calls = R.parse_commandstats(info)
        return calls.ping or 0
    end
    local before = pings()
    sh(bench_cmd("baseline", "pings-baseline", base .. ".events") .. " >" .. q(base .. ".out")
       .. " 2>" .. q(base .. ".err") .. "; echo $? >" .. q(base .. ".rc"))
    local after = pings()
    local rc, r, err = collect(base)
    check_common(rc, r, err)
    check_pings(r)
    check(after - before == r.setup_pings, "the server ran %d PINGs, setup_pings says %s",
          after - before, tostring(r.setup_pings))
end)

if have_rlk then
    test("--lock semaphore is refused with --baseline and for W1 (exit 2)", function()
        for _, extra in ipairs({ "--workload w2 --baseline", "--workload w1" }) do
            local out = sh(q(bench) .. " " .. extra .. " --clients 2 --duration 1 --port " .. port
                           .. " --lock semaphore >/dev/null 2>&1; echo $?")
            check(out:match("^2"), "%s: exit %s", extra, out)
        end
    end)

    test("W1 through each kind's lock calls (--w1-lock --lock KIND): pairs, no error", function()
        for _, kind in ipairs({ "fair", "rwlock-write", "semaphore", "psemaphore" }) do
            local base = scratch .. "/w1-" .. kind
            sh(q(bench) .. " --workload w1 --w1-lock --lock " .. kind .. " --clients 2 --duration 0.5"
               .. " --host 127.0.0.1 --port " .. port .. " --key-prefix " .. q("w1k-" .. kind)
               .. " >" .. q(base .. ".out") .. " 2>" .. q(base .. ".err") .. "; echo $? >"
               .. q(base .. ".rc"))
            local rc, r, err = outcome(base)
            check(rc == 0 and r, "%s: exit %s, stderr: %s", kind, tostring(rc), err)
            if r then
                check(r.workload == "w1" and r.lock == kind and r.w1_calls == "lock",
                      "%s: workload %s, lock %s, calls %s", kind, tostring(r.workload),
                      tostring(r.lock), tostring(r.w1_calls))
                check(r.ops > 0 and r.errors == 0, "%s: %s pairs, %s errors (%s)", kind,
                      tostring(r.ops), tostring(r.errors), tostring(r.last_error))
            end
        end
    end)

    test("--lock in W1 without --w1-lock, and --watchdog with a semaphore: one line, exit 2",
         function()
        for _, extra in ipairs({ "--lock fair", "--w1-lock --lock psemaphore --watchdog" }) do
            local out = sh(q(bench) .. " --workload w1 " .. extra .. " --clients 1 --duration 1"
                           .. " --port " .. port .. " 2>&1 >/dev/null; echo \"rc=$?\"")
            check(out:match("rc=2"), "%s: %s", extra, out)
            check(select(2, out:gsub("\n", "")) == 2 and out:match("^rlk%-bench: "),
                  "%s: not one line: %s", extra, out)
        end
    end)
end

T.finish()
