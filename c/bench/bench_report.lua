-- SPDX-License-Identifier: BSD-3-Clause
-- bench_report: what tools/bench-run prints. Reads the run directory that
-- tools/bench-run filled (one rlk-bench run per id: its stdout, stderr,
-- INFO commandstats before and after, and for W2 its --events-out file),
-- counts the server's work per acquisition, re-checks every W2 run's
-- overlaps from its events, and prints the Markdown tables with the goals.
--
--   luajit c/bench/bench_report.lua report DIR key=value...
--     keys: duration hold_ms repeat w1 w2 (comma lists) version pinned
--           date json_out (a file: every run's record, one JSON per line)
--   Exit: 0 every run that could run completed without an overlap;
--         1 a run failed, or an overlap was recorded or found in its events.
--
-- Also a module (require "bench_report") for c/bench/test_report.lua.
-- Lua 5.1 (LuaJIT or PUC), no libraries beyond io, os, string, table, math.

local M = {}

-- ------------------------------------------------------------------ JSON

local decode_value

local function decode_error(s, i, what)
    error(string.format("JSON: %s at byte %d of %q", what, i, s:sub(1, 80)), 0)
end

local function skip_ws(s, i)
    return s:find("[^ \t\r\n]", i) or #s + 1
end

local escapes = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n",
                  r = "\r", t = "\t" }

local function utf8_of(cp)
    if cp < 0x80 then
        return string.char(cp)
    elseif cp < 0x800 then
        return string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64)
    end
    return string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64,
                       0x80 + cp % 64)
end

local function decode_string(s, i)
    local out, j = {}, i + 1
    while true do
        local c = s:sub(j, j)
        if c == "" then
            decode_error(s, j, "unterminated string")
        elseif c == '"' then
            return table.concat(out), j + 1
        elseif c == "\\" then
            local e = s:sub(j + 1, j + 1)
            if e == "u" then
                local hex = s:sub(j + 2, j + 5)
                if not hex:match("^%x%x%x%x$") then
                    decode_error(s, j, "bad \\u escape")
                end
                out[#out + 1] = utf8_of(tonumber(hex, 16))
                j = j + 6
            elseif escapes[e] then
                out[#out + 1] = escapes[e]
                j = j + 2
            else
                decode_error(s, j, "bad escape")
            end
        else
            local k = s:find('["\\]', j) or #s + 1
            out[#out + 1] = s:sub(j, k - 1)
            j = k
        end
    end
end

local function decode_object(s, i)
    local obj = {}
    i = skip_ws(s, i + 1)
    if s:sub(i, i) == "}" then
        return obj, i + 1
    end
    while true do
        if s:sub(i, i) ~= '"' then
            decode_error(s, i, "expected a key")
        end
        local key, v
        key, i = decode_string(s, i)
        i = skip_ws(s, i)
        if s:sub(i, i) ~= ":" then
            decode_error(s, i, "expected ':'")
        end
        v, i = decode_value(s, skip_ws(s, i + 1))
        obj[key] = v
        i = skip_ws(s, i)
        local c = s:sub(i, i)
        if c == "}" then
            return obj, i + 1
        elseif c ~= "," then
            decode_error(s, i, "expected ',' or '}'")
        end
        i = skip_ws(s, i + 1)
    end
end

local function decode_array(s, i)
    local arr, n = {}, 0
    i = skip_ws(s, i + 1)
    if s:sub(i, i) == "]" then
        return arr, i + 1
    end
    while true do
        local v
        v, i = decode_value(s, i)
        n = n + 1
        arr[n] = v
        i = skip_ws(s, i)
        local c = s:sub(i, i)
        if c == "]" then
            return arr, i + 1
        elseif c ~= "," then
            decode_error(s, i, "expected ',' or ']'")
        end
        i = skip_ws(s, i + 1)
    end
end

local literals = { ["true"] = true, ["false"] = false }

decode_value = function(s, i)
    i = skip_ws(s, i)
    local c = s:sub(i, i)
    if c == "{" then
        return decode_object(s, i)
    elseif c == "[" then
        return decode_array(s, i)
    elseif c == '"' then
        return decode_string(s, i)
    end
    local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
    if num and num ~= "" and num ~= "-" then
        return tonumber(num), i + #num
    end
    for word, v in pairs(literals) do
        if s:sub(i, i + #word - 1) == word then
            return v, i + #word
        end
    end
    if s:sub(i, i + 3) == "null" then
        return nil, i + 4
    end
    decode_error(s, i, "unexpected character")
end

-- Decodes one JSON text; JSON null becomes nil. Raises on malformed input.
function M.json_decode(s)
    local v, i = decode_value(s, 1)
    if skip_ws(s, i) <= #s then
        decode_error(s, i, "trailing characters")
    end
    return v
end

local function encode_string(s)
    return '"' .. s:gsub('[%c"\\]', function(c)
        local named = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r",
                        ["\t"] = "\\t" }
        return named[c] or string.format("\\u%04x", c:byte())
    end) .. '"'
end

local function sorted_keys(t)
    local keys = {}
    for k in pairs(t) do
        keys[#keys + 1] = k
    end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    return keys
end

-- Encodes strings, numbers, booleans and tables (a table with [1] is an
-- array; otherwise an object with its keys sorted).
function M.json_encode(v)
    local t = type(v)
    if t == "string" then
        return encode_string(v)
    elseif t == "number" then
        if v ~= v or v == math.huge or v == -math.huge then
            return "null"
        end
        if v == math.floor(v) and math.abs(v) < 2 ^ 53 then
            return string.format("%d", v)
        end
        local short = string.format("%.14g", v)
        return tonumber(short) == v and short or string.format("%.17g", v)
    elseif t == "boolean" then
        return tostring(v)
    elseif t == "table" then
        local parts = {}
        if v[1] ~= nil then
            for i = 1, #v do
                parts[i] = M.json_encode(v[i])
            end
            return "[" .. table.concat(parts, ",") .. "]"
        end
        for _, k in ipairs(sorted_keys(v)) do
            parts[#parts + 1] = encode_string(tostring(k)) .. ":" .. M.json_encode(v[k])
        end
        return "{" .. table.concat(parts, ",") .. "}"
    end
    return "null"
end

-- ------------------------------------------------------------------ server work

-- Commands that are not part of a workload: this driver's INFO, the
-- clients' SCRIPT LOAD at connect, CONFIG/CLIENT/HELLO/COMMAND chatter.
M.NOT_WORKLOAD = { info = true, script = true, config = true, client = true, hello = true,
                   command = true }

-- Commands only a client sends: a script cannot call the script and
-- subscription commands, and no rlk script calls PING. rlk-bench's clients
-- send nothing else while they run (the lock path of the library is EVALSHA,
-- SUBSCRIBE, UNSUBSCRIBE and the subscriber's PING), so their sum is the
-- number of top-level commands, and the rest ran inside scripts.
M.TOP_LEVEL = { eval = true, evalsha = true, eval_ro = true, evalsha_ro = true, fcall = true,
                fcall_ro = true, subscribe = true, unsubscribe = true, psubscribe = true,
                punsubscribe = true, ssubscribe = true, sunsubscribe = true, ping = true }

-- {command = calls} from the text of INFO commandstats ("client|setname"
-- for subcommands).
function M.parse_commandstats(text)
    local calls, usec = {}, {}
    for name, n, us in text:gmatch("cmdstat_([^:\r\n]+):calls=(%d+),usec=(%d+)") do
        calls[name] = tonumber(n)
        usec[name] = tonumber(us)
    end
    return calls, usec
end

-- Server time (µs) of the top-level commands between two commandstats (a
-- script's time includes the commands it calls).
function M.server_usec(before, after)
    local us = 0
    for name, v in pairs(after) do
        if M.TOP_LEVEL[name] or name == "set" then
            us = us + v - (before[name] or 0)
        end
    end
    return us
end

-- The workload's share of the difference between two commandstats:
-- { calls = {command = n}, total = n, top = n, inner = n }. setup_dels
-- DELs (rlk-bench deletes its keys before and after a run) are taken off, and the setup's
-- PINGs, and its setup_publishes PUBLISHes with their one SUBSCRIBE (the handoff's floor).
function M.server_work(before, after, setup_dels, setup_pings, setup_publishes)
    local calls, total, top = {}, 0, 0
    local setup = { del = setup_dels, ping = setup_pings, publish = setup_publishes,
                    subscribe = (setup_publishes or 0) > 0 and 1 or nil }
    for _, name in ipairs(sorted_keys(after)) do
        local d = after[name] - (before[name] or 0) - (setup[name] or 0)
        if d > 0 and not M.NOT_WORKLOAD[name:match("^[^|]+")] then
            calls[name] = d
            total = total + d
            if M.TOP_LEVEL[name] then
                top = top + d
            end
        end
    end
    return { calls = calls, total = total, top = top, inner = total - top }
end

-- ------------------------------------------------------------------ events

-- The records of --events-out: a list of {contender, request, acquire,
-- release} (ns), or nil and a message; then (second value nil) the start
-- time its header line names (start_ns=..., absolute CLOCK_MONOTONIC ns), or 0.
function M.read_events(path)
    local f, err = io.open(path, "r")
    if not f then
        return nil, err
    end
    local ev, lineno, start = {}, 0, 0
    for line in f:lines() do
        lineno = lineno + 1
        local c, rq, aq, rl = line:match("^(%-?%d+),(%-?%d+),(%-?%d+),(%-?%d+)$")
        if not c and line:sub(1, 1) == "#" then
            c = false   -- the header line (rlk-bench writes one; other implementations may)
            start = tonumber(line:match("start_ns=(%d+)")) or start
        elseif not c then
            f:close()
            return nil, string.format("%s:%d: not contender,request,acquire,release", path, lineno)
        end
        if c then
            ev[#ev + 1] = { tonumber(c), tonumber(rq), tonumber(aq), tonumber(rl) }
        end
    end
    f:close()
    return ev, nil, start
end

-- Pairs of records whose closed intervals [acquire, release] intersect,
-- counted independently of rlk-bench's own check. Sorts ev.
function M.count_overlaps(ev)
    table.sort(ev, function(a, b)
        if a[3] ~= b[3] then return a[3] < b[3] end
        if a[1] ~= b[1] then return a[1] < b[1] end
        return a[4] < b[4]
    end)
    local n = 0
    for i = 1, #ev do
        local j = i + 1
        while j <= #ev and ev[j][3] <= ev[i][4] do
            n = n + 1
            j = j + 1
        end
    end
    return n
end

-- ------------------------------------------------------------------ runs

local function read_file(path)
    local f = io.open(path, "r")
    if not f then
        return nil
    end
    local s = f:read("*a")
    f:close()
    return s
end

local function last_line(text)
    local last
    for line in (text or ""):gmatch("[^\n]+") do
        last = line
    end
    return last
end

-- One run's record from its files (dir/id.{out,err,before,after,events}).
function M.load_run(dir, meta)
    local base = dir .. "/" .. meta.id
    local res = { workload = meta.workload, clients = meta.clients, variant = meta.variant,
                  ["repeat"] = meta["repeat"], exit = meta.exit,
                  stderr = (read_file(base .. ".err") or ""):gsub("%s+$", "") }
    local line = last_line(read_file(base .. ".out"))
    if meta.exit ~= 0 or not line then
        return res
    end
    local ok, r = pcall(M.json_decode, line)
    if not ok or type(r) ~= "table" then
        res.exit = -1
        res.stderr = "unreadable result: " .. tostring(r)
        return res
    end
    res.result = r
    local setup_dels = 2 * (meta.workload == "w1" and meta.clients or 1)
    local cb, ub = M.parse_commandstats(read_file(base .. ".before") or "")
    local ca, ua = M.parse_commandstats(read_file(base .. ".after") or "")
    local work = M.server_work(cb, ca, setup_dels, r.setup_pings, r.setup_publishes)
    res.server_usec = M.server_usec(ub, ua)
    res.server_calls, res.commands_total, res.commands_top = work.calls, work.total, work.top
    if meta.workload == "w1" then
        res.acquisitions_all = r.ops
    else
        local ev, err = M.read_events(base .. ".events")
        if ev then
            res.acquisitions_all = #ev
            res.overlaps_recheck = M.count_overlaps(ev)
        else
            res.events_error = err
            res.acquisitions_all = r.acquisitions
        end
    end
    return res
end

-- Every run listed in dir/runs.tsv (id, workload, clients, variant, repeat,
-- exit; tab-separated), in order.
function M.load_runs(dir)
    local runs = {}
    local text = read_file(dir .. "/runs.tsv") or ""
    for line in text:gmatch("[^\n]+") do
        local id, w, n, v, rep, ex = line:match("^(%S+)\t(%S+)\t(%d+)\t(%S+)\t(%d+)\t(%-?%d+)$")
        if id then
            runs[#runs + 1] = M.load_run(dir, { id = id, workload = w, clients = tonumber(n),
                                                variant = v, ["repeat"] = tonumber(rep),
                                                exit = tonumber(ex) })
        end
    end
    return runs
end

local function rate_of(res)
    return res.workload == "w1" and res.result.ops_per_s or res.result.acq_per_s
end

-- Per (workload, clients, variant): the run with the median rate, or the
-- last run when none succeeded.
function M.median_runs(runs)
    local cells, order = {}, {}
    for _, res in ipairs(runs) do
        local key = res.workload .. "/" .. res.clients .. "/" .. res.variant
        if not cells[key] then
            cells[key] = {}
            order[#order + 1] = key
        end
        table.insert(cells[key], res)
    end
    local picked = {}
    for _, key in ipairs(order) do
        local ok = {}
        for _, res in ipairs(cells[key]) do
            if res.result then
                ok[#ok + 1] = res
            end
        end
        table.sort(ok, function(a, b) return rate_of(a) < rate_of(b) end)
        picked[key] = ok[math.floor((#ok + 1) / 2)] or cells[key][#cells[key]]
    end
    return picked
end

-- ------------------------------------------------------------------ cells

local function per(n, d)
    if n == nil or d == nil or d == 0 then
        return nil
    end
    return n / d
end

function M.w1_cell(res)
    local r = res and res.result
    if not r then
        return nil
    end
    return { rate = r.ops_per_s, p50 = r.pair_lat_us.p50, p99 = r.pair_lat_us.p99,
             usec = per(res.server_usec, res.acquisitions_all),
             total = per(res.commands_total, res.acquisitions_all),
             top = per(res.commands_top, res.acquisitions_all), errors = r.errors }
end

function M.w2_cell(res, hold_ms)
    local r = res and res.result
    if not r then
        return nil
    end
    local hold_p99 = r.hold_us.p99
    return { rate = r.acq_per_s, handoffs = r.handoffs_per_s,
             handoff_frac = per(r.handoffs_per_s, r.acq_per_s),
             p50 = r.handoff_other_us.p50, p99 = r.handoff_other_us.p99,
             total = per(res.commands_total, res.acquisitions_all),
             top = per(res.commands_top, res.acquisitions_all),
             jain = r.jain_fairness, overlaps = r.overlaps, recheck = res.overlaps_recheck,
             stuck = r.stuck_at_deadline,
             evalsha = per(res.server_calls and res.server_calls.evalsha or nil,
                           res.acquisitions_all),
             p50_rtt = per(r.handoff_other_us.p50, r.rtt_us and r.rtt_us.p50),
             -- The same p50 read against PINGs each sent right after sleeping the hold, as
             -- the release is sent (nil from a bench older than the field).
             p50_rtt_held = per(r.handoff_other_us.p50,
                                r.rtt_after_hold_us and r.rtt_after_hold_us.p50),
             disturbed = hold_p99 ~= nil and hold_p99 > hold_ms * 2000 + 2000 }
end

-- ------------------------------------------------------------------ goals

-- The goals of the rlk rows. Each: what, where (clients, or nil: every W2
-- size), the cell field, the comparison, the bound, and how to print it.
M.W1_RATIO_GOAL = 0.95
M.W2_GOALS = {
    { what = "handoffs/s ÷ acq/s", at = 32, field = "handoff_frac", op = ">=", bound = 0.9,
      digits = 2 },
    { what = "handoff p50 µs", at = 32, field = "p50", op = "<=", bound = 250, digits = 1 },
    { what = "handoff p99 µs", at = 32, field = "p99", op = "<=", bound = 2000, digits = 1 },
    { what = "top-level commands/acq", field = "top", op = "<=", bound = 6, digits = 2 },
    { what = "Jain fairness", field = "jain", op = ">=", bound = 0.99, digits = 3 },
    { what = "overlaps", field = "overlaps", op = "==", bound = 0, digits = 0 },
    { what = "overlaps (re-checked from the events)", field = "recheck", op = "==", bound = 0,
      digits = 0 },
    { what = "stuck", field = "stuck", op = "==", bound = 0, digits = 0 },
}

function M.meets(v, op, bound)
    if v == nil or bound == nil then
        return nil
    elseif op == ">=" then
        return v >= bound
    elseif op == "<=" then
        return v <= bound
    end
    return v == bound
end

-- nil: "n/a"; a number with `digits` decimals (default: integers as they
-- are, others with 1); anything else as tostring gives it.
local function fmt(v, digits)
    if v == nil then
        return "n/a"
    elseif type(v) ~= "number" then
        return tostring(v)
    elseif digits == nil and v == math.floor(v) then
        return string.format("%d", v)
    end
    return string.format("%." .. (digits or 1) .. "f", v)
end
M.fmt = fmt

local function verdict_word(ok)
    if ok == nil then
        return "n/a"
    end
    return ok and "met" or "MISSED"
end

local function why_missing(res)
    local msg = last_line(res.stderr) or ("exit " .. tostring(res.exit))
    return (msg:gsub("^rlk%-bench: ", ""):gsub("|", "/"))
end

-- ------------------------------------------------------------------ tables

-- Server µs per pair: rlk's scripts against the SET NX PX + compare-and-
-- delete lock, in the same run (target: at most 2x). Beside them,
-- Redisson 3.x's RLock scripts (variant redisson: c/bench/redisson, hash +
-- pexpire + publish, no checks, no queue), the floor of the Redisson layout,
-- and rlk ÷ that. A row needs the setnx or the redisson cell.
M.SERVER_US_GOAL = 2
function M.table_server_us(picked, sizes)
    local out = {
        "### W1: server time per acquire + release pair (INFO commandstats, top-level µs)", "",
        "| clients | rlk µs/pair | rlk scripts by raw EVALSHA µs/pair | SET NX PX + compare-and-" ..
            "delete µs/pair | rlk ÷ SET NX PX | goal ≤ " .. fmt(M.SERVER_US_GOAL, 1) ..
            " | Redisson's scripts µs/pair | rlk ÷ Redisson's |",
        "| ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |" }
    local goals = {}
    for _, n in ipairs(sizes) do
        local r = M.w1_cell(picked["w1/" .. n .. "/rlk"])
        local b = M.w1_cell(picked["w1/" .. n .. "/baseline"])
        local x = M.w1_cell(picked["w1/" .. n .. "/setnx"])
        local rs = M.w1_cell(picked["w1/" .. n .. "/redisson"])
        local ratio = r and x and per(r.usec, x.usec)
        local ok = M.meets(ratio, "<=", M.SERVER_US_GOAL)
        if x or rs then
            out[#out + 1] = string.format("| %d | %s | %s | %s | %s | %s | %s | %s |", n,
                fmt(r and r.usec, 2), fmt(b and b.usec, 2), fmt(x and x.usec, 2), fmt(ratio, 2),
                verdict_word(ok), fmt(rs and rs.usec, 2),
                fmt(r and rs and per(r.usec, rs.usec), 2))
        end
        if x then
            goals[#goals + 1] = { what = "W1 at " .. n .. ": server µs/pair ÷ SET NX PX lock's",
                                  target = "≤ " .. fmt(M.SERVER_US_GOAL, 1),
                                  measured = fmt(ratio, 2), ok = ok }
        end
    end
    return out, goals
end

function M.table_w1(picked, sizes)
    local out = {
        "### W1: uncontended acquire + release pairs", "",
        "| clients | rlk pairs/s | baseline pairs/s | rlk ÷ baseline | goal ≥ " ..
            fmt(M.W1_RATIO_GOAL, 2) .. " | rlk pair p50 / p99 µs | baseline pair p50 / p99 µs | " ..
            "rlk commands/pair (top-level) | baseline commands/pair (top-level) | errors |",
        "| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |" }
    local goals = {}
    for _, n in ipairs(sizes) do
        local rres, bres = picked["w1/" .. n .. "/rlk"], picked["w1/" .. n .. "/baseline"]
        local r, b = M.w1_cell(rres), M.w1_cell(bres)
        local ratio = r and b and per(r.rate, b.rate)
        local ok = M.meets(ratio, ">=", M.W1_RATIO_GOAL)
        local function rate(c, res)
            if c then return fmt(c.rate, 0) end
            return res and ("n/a: " .. why_missing(res)) or "not run"
        end
        local function lat(c)
            return c and (fmt(c.p50, 1) .. " / " .. fmt(c.p99, 1)) or ""
        end
        local function cmds(c)
            return c and (fmt(c.total, 2) .. " (" .. fmt(c.top, 2) .. ")") or ""
        end
        out[#out + 1] = string.format("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |",
            n, rate(r, rres), rate(b, bres), fmt(ratio, 2), verdict_word(ok), lat(r), lat(b),
            cmds(r), cmds(b), r and fmt(r.errors) or "-", b and fmt(b.errors) or "-")
        goals[#goals + 1] = { what = "W1 at " .. n .. ": rlk ÷ baseline pairs/s",
                              target = "≥ " .. fmt(M.W1_RATIO_GOAL, 2),
                              measured = fmt(ratio, 2), ok = ok }
    end
    return out, goals
end

-- The lock calls applications make beside the raw call, from the same run:
-- rlk (rlk_evalv of the two scripts by name), rlk-lockw1 (rlk_lock_try_lock
-- wait 0 + rlk_lock_unlock, a fixed 30 s lease), rlk-lockw1-wd (the same with
-- the watchdog's lease), rlk-async (rlk_async_lock + rlk_async_unlock), each
-- as a ratio of the raw hiredis baseline's pairs/s and of its client CPU per
-- pair (user + system of the rlk-bench process around the run). Goals: the
-- blocking lock calls >= 0.95 x raw pairs/s, CPU per pair <= 1.2 x raw.
-- Empty when the run had none of the lock-call variants.
M.W1_CALLS_GOAL = 0.95
M.W1_CALLS_CPU_GOAL = 1.2
M.W1_CALLS = {
    { variant = "rlk", name = "rlk_evalv" },
    { variant = "rlk-lockw1", name = "lock calls, fixed lease", goal = true },
    { variant = "rlk-lockw1-wd", name = "lock calls, watchdog lease", goal = true },
    { variant = "rlk-async", name = "async lock calls" },
}
function M.table_w1_calls(picked, sizes)
    local head = "| clients | raw hiredis pairs/s (CPU µs/pair) |"
    local rule = "| ---: | ---: |"
    for _, c in ipairs(M.W1_CALLS) do
        head = head .. " " .. c.name .. " pairs/s (CPU µs/pair) | ÷ raw: pairs/s, CPU |"
        rule = rule .. " ---: | ---: |"
    end
    local out, goals, any = {
        "### W1: the lock calls beside raw hiredis (pairs/s and client CPU per pair)", "",
        head, rule }, {}, false
    for _, n in ipairs(sizes) do
        local bres = picked["w1/" .. n .. "/baseline"]
        local b = M.w1_cell(bres)
        local bcpu = bres and bres.result and bres.result.cpu_us_per_pair
        local row = string.format("| %d | %s (%s) |", n, fmt(b and b.rate, 0), fmt(bcpu, 1))
        for _, c in ipairs(M.W1_CALLS) do
            local res = picked["w1/" .. n .. "/" .. c.variant]
            local r = M.w1_cell(res)
            local cpu = res and res.result and res.result.cpu_us_per_pair
            local ratio = r and b and per(r.rate, b.rate)
            local cpu_ratio = per(cpu, bcpu)
            if r and c.variant ~= "rlk" then
                any = true
            end
            row = row .. string.format(" %s (%s) | %s, %s |", fmt(r and r.rate, 0), fmt(cpu, 1),
                                       fmt(ratio, 2), fmt(cpu_ratio, 2))
            if c.goal and r then
                goals[#goals + 1] = { what = "W1 at " .. n .. ": " .. c.name .. " ÷ raw pairs/s",
                                      target = "≥ " .. fmt(M.W1_CALLS_GOAL, 2),
                                      measured = fmt(ratio, 2),
                                      ok = M.meets(ratio, ">=", M.W1_CALLS_GOAL) }
                goals[#goals + 1] = { what = "W1 at " .. n .. ": " .. c.name ..
                                          " client CPU/pair ÷ raw",
                                      target = "≤ " .. fmt(M.W1_CALLS_CPU_GOAL, 1),
                                      measured = fmt(cpu_ratio, 2),
                                      ok = M.meets(cpu_ratio, "<=", M.W1_CALLS_CPU_GOAL) }
            end
        end
        out[#out + 1] = row
    end
    if not any then
        return {}, {}
    end
    return out, goals
end

-- The other kinds' blocking lock calls in W1 (variants fair, rwlock-write, semaphore and
-- psemaphore run rlk-bench --w1-lock --lock KIND: try_lock / try_acquire with wait 0, then
-- unlock / release, a fixed 30 s lease where the kind has one), a row each beside raw hiredis
-- and the reentrant lock's calls (rlk-lockw1): pairs/s and client CPU per pair as ratios of
-- raw's, the server's µs and commands per pair. Raw hiredis runs the reentrant lock's scripts,
-- so a kind's ratio also holds its own scripts' server time; no goal is read from it. Empty
-- without one of those kinds.
M.W1_KINDS = {
    { variant = "baseline", name = "raw hiredis (reentrant scripts)", ref = true },
    { variant = "rlk-lockw1", name = "reentrant", ref = true },
    { variant = "fair", name = "fair" },
    { variant = "rwlock-write", name = "read-write (write side)" },
    { variant = "semaphore", name = "semaphore" },
    { variant = "psemaphore", name = "permit-expirable semaphore" },
}
function M.table_w1_kinds(picked, sizes)
    local out, any = {
        "### W1: each kind's lock calls beside raw hiredis", "",
        "| clients | calls | pairs/s | ÷ raw | client CPU µs/pair (÷ raw) | server µs/pair | " ..
            "commands/pair (top-level) | errors |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |" }, false
    for _, n in ipairs(sizes) do
        local bres = picked["w1/" .. n .. "/baseline"]
        local b = M.w1_cell(bres)
        local bcpu = bres and bres.result and bres.result.cpu_us_per_pair
        for _, c in ipairs(M.W1_KINDS) do
            local res = picked["w1/" .. n .. "/" .. c.variant]
            local r = M.w1_cell(res)
            if r then
                any = any or not c.ref
                local cpu = res.result.cpu_us_per_pair
                out[#out + 1] = string.format("| %d | %s | %s | %s | %s (%s) | %s | %s (%s) | %s |",
                    n, c.name, fmt(r.rate, 0), fmt(b and per(r.rate, b.rate), 2), fmt(cpu, 1),
                    fmt(per(cpu, bcpu), 2), fmt(r.usec, 1), fmt(r.total, 2), fmt(r.top, 2),
                    fmt(r.errors))
            end
        end
    end
    return any and out or {}, {}
end

local function goal_text(g)
    local op = { [">="] = "≥ ", ["<="] = "≤ ", ["=="] = "" }
    return op[g.op] .. fmt(g.bound, g.bound == math.floor(g.bound) and 0 or 2)
        .. (g.at and (" at " .. g.at) or "")
end

local function w2_goal_cells()
    local cells = {}
    for _, g in ipairs(M.W2_GOALS) do
        cells[g.field] = goal_text(g)
    end
    return cells
end

-- The W2 variants, in the order of the tables' rows (a variant not run has no row).
local W2_VARIANTS = { "rlk", "fair", "spin", "rwlock-write", "semaphore", "psemaphore",
                      "fastmulti10", "multilock10", "fastmulti100", "multilock100", "baseline" }

local function w2_row(n, variant, c, res)
    if not c then
        local why = res and ("n/a: " .. why_missing(res)) or "not run"
        return string.format("| %d | %s | %s | | | | | | | | | |", n, variant, why)
    end
    local overlaps = fmt(c.overlaps)
    if c.recheck ~= c.overlaps then
        overlaps = overlaps .. " (events: " .. fmt(c.recheck) .. ")"
    end
    return string.format("| %d | %s | %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |",
        n, variant, fmt(c.rate, 0), c.disturbed and " (disturbed)" or "", fmt(c.handoffs, 0),
        fmt(c.handoff_frac, 2), fmt(c.p50, 1), fmt(c.p99, 1), fmt(c.total, 2), fmt(c.top, 2),
        fmt(c.jain, 3), overlaps, fmt(c.stuck))
end

function M.table_w2(picked, sizes, hold_ms)
    local g = w2_goal_cells()
    local out = {
        "### W2: contended handoff (hold " .. hold_ms .. " ms, slept)", "",
        "| contenders | variant | acq/s | handoffs/s | handoffs ÷ acq | handoff p50 µs | " ..
            "handoff p99 µs | commands/acq | top-level commands/acq | Jain | overlaps | stuck |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        string.format("| | goal (rlk) | | | %s | %s | %s | | %s | %s | %s | %s |",
                      g.handoff_frac, g.p50, g.p99, g.top, g.jain, g.overlaps, g.stuck) }
    local goals = {}
    for _, n in ipairs(sizes) do
        for _, variant in ipairs(W2_VARIANTS) do
            local res = picked["w2/" .. n .. "/" .. variant]
            local c = M.w2_cell(res, hold_ms)
            if res then
                out[#out + 1] = w2_row(n, variant, c, res)
            end
            if variant == "rlk" then
                for _, goal in ipairs(M.W2_GOALS) do
                    if goal.at == nil or goal.at == n then
                        local v = c and c[goal.field]
                        goals[#goals + 1] = { what = "W2 at " .. n .. ": " .. goal.what,
                                              target = goal_text(goal):gsub(" at %d+$", ""),
                                              measured = fmt(v, goal.digits),
                                              ok = M.meets(v, goal.op, goal.bound) }
                    end
                end
            end
        end
    end
    return out, goals
end

-- The goals with one contender per process (every size): the rlk rows, and
-- the fair lock's.
M.W2P_GOALS = {
    { what = "handoffs ÷ acquisitions", field = "handoff_frac", op = ">=", bound = 0.9, digits = 2 },
    { what = "Jain fairness", field = "jain", op = ">=", bound = 0.99, digits = 3 },
    { what = "EVALSHA/acq", field = "evalsha", op = "<=", bound = 3, digits = 2 },
    { what = "commands/acq", field = "total", op = "<=", bound = 20, digits = 2 },
    { what = "handoff p50 in round trips", field = "p50_rtt", op = "<=", bound = 3, digits = 1 },
    { what = "overlaps", field = "overlaps", op = "==", bound = 0, digits = 0 },
    { what = "overlaps (re-checked from the events)", field = "recheck", op = "==", bound = 0,
      digits = 0 },
    { what = "stuck", field = "stuck", op = "==", bound = 0, digits = 0 },
}
M.W2P_FAIR_GOALS = {
    { what = "fair: commands/acq", field = "total", op = "<=", bound = 30, digits = 2 },
    { what = "fair: Jain fairness", field = "jain", op = ">=", bound = 0.99, digits = 3 },
    { what = "fair: overlaps", field = "overlaps", op = "==", bound = 0, digits = 0 },
    { what = "fair: stuck", field = "stuck", op = "==", bound = 0, digits = 0 },
}

local MODES = { { key = "w2", name = "threads" }, { key = "w2p", name = "processes" } }

local function modes_row(n, mode, variant, c, res)
    if not c then
        local why = res and ("n/a: " .. why_missing(res)) or "not run"
        return string.format("| %d | %s | %s | %s | | | | | | | | | |", n, mode, variant, why)
    end
    local overlaps = fmt(c.overlaps)
    if c.recheck ~= c.overlaps then
        overlaps = overlaps .. " (events: " .. fmt(c.recheck) .. ")"
    end
    return string.format("| %d | %s | %s | %s%s | %s | %s (%s / %s) | %s | %s | %s | %s | %s | %s |",
        n, mode, variant, fmt(c.rate, 0), c.disturbed and " (disturbed)" or "",
        fmt(c.handoff_frac, 2), fmt(c.p50, 1), fmt(c.p50_rtt, 1), fmt(c.p50_rtt_held, 1),
        fmt(c.p99, 1),
        fmt(c.evalsha, 2), fmt(c.total, 2), fmt(c.jain, 3), overlaps, fmt(c.stuck))
end

local function add_goals(goals, list, n, c)
    for _, goal in ipairs(list) do
        local v = c and c[goal.field]
        goals[#goals + 1] = { what = "W2 processes at " .. n .. ": " .. goal.what,
                              target = goal_text(goal), measured = fmt(v, goal.digits),
                              ok = M.meets(v, goal.op, goal.bound) }
    end
end

-- W2 with one contender per thread of one process and one per process, side
-- by side; the goals of the multi-process rows.
function M.table_w2_modes(picked, sizes, hold_ms)
    local out = {
        "### W2: threads of one process vs one process per contender (hold " .. hold_ms ..
            " ms, slept)", "",
        "| contenders | mode | variant | acq/s | handoffs ÷ acq | " ..
            "handoff p50 µs (PINGs / PINGs after a hold) | " ..
            "handoff p99 µs | EVALSHA/acq | commands/acq | Jain | overlaps | stuck |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |" }
    local goals = {}
    for _, n in ipairs(sizes) do
        for _, variant in ipairs(W2_VARIANTS) do
            for _, mode in ipairs(MODES) do
                local res = picked[mode.key .. "/" .. n .. "/" .. variant]
                local c = M.w2_cell(res, hold_ms)
                if res then
                    out[#out + 1] = modes_row(n, mode.name, variant, c, res)
                    if mode.key == "w2p" and variant == "rlk" then
                        add_goals(goals, M.W2P_GOALS, n, c)
                    elseif mode.key == "w2p" and variant == "fair" then
                        add_goals(goals, M.W2P_FAIR_GOALS, n, c)
                    end
                end
            end
        end
    end
    return out, goals
end

-- Who a handoff wakes (subscriber wake-ups per handoff, summed over every contender's
-- client; pub/sub messages received per acquisition) and the p50 of each step of a handoff
-- (rlk-bench's timeline), for every W2 run of the rlk variant.
local TIMELINE = { "release_to_message_us", "message_to_woken_us", "woken_to_claim_sent_us",
                   "claim_rtt_us", "claim_to_return_us", "release_rtt_us", "handoff_us" }

function M.table_w2_wake(picked, sizes)
    local out = {
        "### W2 (rlk): who a handoff wakes, and where its time goes (p50 µs of each step)", "",
        "| contenders | mode | woken subscribers ÷ handoff | messages ÷ acq | release → message | " ..
            "message → thread woken | woken → claim sent | claim round trip | claim → return | " ..
            "release round trip | release → acquired | PING | PING after a hold | " ..
            "PUBLISH after a hold → message | server µs ÷ acq |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: " ..
            "| ---: | ---: |" }
    for _, n in ipairs(sizes) do
        for _, mode in ipairs(MODES) do
            local res = picked[mode.key .. "/" .. n .. "/rlk"]
            local r = res and res.result
            if r and r.sub_wakeups_per_handoff ~= nil then
                local cells = {}
                for i, k in ipairs(TIMELINE) do
                    cells[i] = fmt(r[k] and r[k].p50, 1)
                end
                out[#out + 1] = string.format("| %d | %s | %s | %s | %s | %s | %s | %s | %s |", n,
                    mode.name, fmt(r.sub_wakeups_per_handoff, 2), fmt(r.sub_messages_per_acq, 2),
                    table.concat(cells, " | "), fmt(r.rtt_us and r.rtt_us.p50, 1),
                    fmt(r.rtt_after_hold_us and r.rtt_after_hold_us.p50, 1),
                    fmt(r.publish_after_hold_us and r.publish_after_hold_us.p50, 1),
                    fmt(per(res.server_usec, res.acquisitions_all), 1))
            end
        end
    end
    return out
end

-- What the server ran per acquisition of the reentrant lock (rlk variant), command by
-- command, for every W2 size and mode: where "commands/acq" comes from (top-level commands first,
-- then those inside scripts, each by how often it ran).
function M.table_w2_commands(picked, sizes)
    local out = {
        "### W2 (rlk): server commands per acquisition, by command", "",
        "| contenders | mode | commands/acq | top-level (sent by clients) | inside scripts |",
        "| ---: | --- | ---: | --- | --- |" }
    for _, n in ipairs(sizes) do
        for _, mode in ipairs(MODES) do
            local res = picked[mode.key .. "/" .. n .. "/rlk"]
            local calls, acq = res and res.server_calls, res and res.acquisitions_all
            if calls and acq and acq > 0 then
                local top, inner = {}, {}
                for name, k in pairs(calls) do
                    local list = M.TOP_LEVEL[name] and top or inner
                    list[#list + 1] = { name = name, per = k / acq }
                end
                local function text(list)
                    table.sort(list, function(a, b)
                        if a.per ~= b.per then return a.per > b.per end
                        return a.name < b.name
                    end)
                    local parts = {}
                    for i, e in ipairs(list) do
                        parts[i] = e.name:upper() .. " " .. fmt(e.per, 2)
                    end
                    return #parts > 0 and table.concat(parts, ", ") or "-"
                end
                out[#out + 1] = string.format("| %d | %s | %s | %s | %s |", n, mode.name,
                    fmt(per(res.commands_total, acq), 2), text(top), text(inner))
            end
        end
    end
    return out
end

-- The read-write lock's write side and the two semaphores (1 permit) beside the
-- reentrant lock (rlk) of the same run: handoff p50 and p99, who a handoff wakes, and the safety
-- columns, per contender count and mode.
M.KINDS = { "rlk", "fair", "rwlock-write", "semaphore", "psemaphore" }

function M.table_w2_kinds(picked, sizes, hold_ms)
    local out = {
        "### W2: handoffs of every kind (hold " .. hold_ms .. " ms, slept)", "",
        "| contenders | mode | kind | handoff p50 µs | p50 ÷ rlk's | handoff p99 µs | acq/s | " ..
            "handoffs ÷ acq | woken subscribers ÷ handoff | messages ÷ acq | commands/acq | " ..
            "overlaps | stuck |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |" }
    local others = 0
    for _, n in ipairs(sizes) do
        for _, mode in ipairs(MODES) do
            local base = M.w2_cell(picked[mode.key .. "/" .. n .. "/rlk"], hold_ms)
            for _, kind in ipairs(M.KINDS) do
                local res = picked[mode.key .. "/" .. n .. "/" .. kind]
                local c = M.w2_cell(res, hold_ms)
                local r = res and res.result
                if c then
                    if kind ~= "rlk" and kind ~= "fair" then
                        others = others + 1
                    end
                    local overlaps = fmt(c.overlaps)
                    if c.recheck ~= c.overlaps then
                        overlaps = overlaps .. " (events: " .. fmt(c.recheck) .. ")"
                    end
                    out[#out + 1] = string.format(
                        "| %d | %s | %s | %s | %s | %s | %s%s | %s | %s | %s | %s | %s | %s |",
                        n, mode.name, kind, fmt(c.p50, 1),
                        fmt(per(c.p50, base and base.p50), 2), fmt(c.p99, 1), fmt(c.rate, 0),
                        c.disturbed and " (disturbed)" or "", fmt(c.handoff_frac, 2),
                        fmt(r.sub_wakeups_per_handoff, 2), fmt(r.sub_messages_per_acq, 2),
                        fmt(c.total, 2), overlaps, fmt(c.stuck))
                end
            end
        end
    end
    if others == 0 then
        return {}
    end
    return out
end

-- Many names at once: the faster MultiLock (fastmulti<N>: N values of one group hash, one
-- script call per acquisition and per release) beside rlk's MultiLock of N reentrant locks
-- (multilock<N>), and the spin lock beside the pub/sub lock (rlk), from the same run, per
-- contender count and mode. "ratio" is the row's acq/s over its reference's (multilock<N>; rlk).
M.MANY = { { "fastmulti10", "multilock10" }, { "fastmulti100", "multilock100" }, { "spin", "rlk" } }

function M.table_w2_many(picked, sizes, hold_ms)
    local out = {
        "### W2: faster MultiLock beside MultiLock, spin beside pub/sub (hold " .. hold_ms ..
            " ms, slept)", "",
        "| contenders | mode | variant | acq/s | ratio to reference | reference | reference acq/s | " ..
            "handoff p50 µs | handoff p99 µs | commands/acq | Jain | overlaps | stuck |",
        "| ---: | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |" }
    local rows = 0
    for _, n in ipairs(sizes) do
        for _, mode in ipairs(MODES) do
            for _, pair in ipairs(M.MANY) do
                local res = picked[mode.key .. "/" .. n .. "/" .. pair[1]]
                local c = M.w2_cell(res, hold_ms)
                local base = M.w2_cell(picked[mode.key .. "/" .. n .. "/" .. pair[2]], hold_ms)
                if c then
                    rows = rows + 1
                    local overlaps = fmt(c.overlaps)
                    if c.recheck ~= c.overlaps then
                        overlaps = overlaps .. " (events: " .. fmt(c.recheck) .. ")"
                    end
                    out[#out + 1] = string.format(
                        "| %d | %s | %s | %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |",
                        n, mode.name, pair[1], fmt(c.rate, 0), c.disturbed and " (disturbed)" or "",
                        fmt(per(c.rate, base and base.rate), 2), pair[2],
                        fmt(base and base.rate, 0), fmt(c.p50, 1), fmt(c.p99, 1), fmt(c.total, 2),
                        fmt(c.jain, 3), overlaps, fmt(c.stuck))
                end
            end
        end
    end
    if rows == 0 then
        return {}
    end
    return out
end

function M.table_goals(goals)
    local out = { "### Goals (rlk)", "", "| goal | target | measured | |",
                  "| --- | --- | ---: | --- |" }
    for _, g in ipairs(goals) do
        out[#out + 1] = string.format("| %s | %s | %s | %s |", g.what, g.target, g.measured,
                                      verdict_word(g.ok))
    end
    return out
end

-- ------------------------------------------------------------------ verdict

-- 1 when a run failed (other than "not built": exit 2) or an overlap was
-- recorded or found in its events; messages go to stderr.
function M.verdict(runs, warn)
    local bad = 0
    for _, res in ipairs(runs) do
        local r = res.result
        local name = string.format("%s %d %s #%d", res.workload, res.clients, res.variant,
                                   (res["repeat"] or 0) + 1)
        if not r and res.exit ~= 2 then
            warn("bench-run: " .. name .. " failed: " .. (res.stderr ~= "" and res.stderr
                 or ("exit " .. tostring(res.exit))))
            bad = 1
        end
        if r and ((r.overlaps or 0) > 0 or (res.overlaps_recheck or 0) > 0) then
            warn(string.format("bench-run: MUTUAL EXCLUSION VIOLATED in %s: %s overlaps "
                               .. "(events re-check: %s)", name, fmt(r.overlaps),
                               fmt(res.overlaps_recheck)))
            bad = 1
        end
        if r and res.events_error then
            warn("bench-run: " .. name .. ": events not re-checked: " .. res.events_error)
        end
    end
    return bad
end

-- ------------------------------------------------------------------ TLS

-- TLS beside plain TCP, from variants rlk-tls and
-- baseline-tls of the same run: W1 pairs/s and W2 handoffs, each TLS cell
-- divided by its plain one. Goals: rlk over TLS >= 0.8 x rlk over TCP in W1
-- at 1 and 8 clients, and >= 0.95 x raw hiredis over TLS (TLS adds nothing
-- to what rlk costs); W2 handoffs still 1.00 of acquisitions at 32
-- processes. Empty when the run had no -tls variant.
M.TLS_W1_GOAL = 0.8
M.TLS_RAW_GOAL = 0.95
function M.table_tls(picked, w1_sizes, w2_sizes, hold_ms)
    local out, goals, any = {
        "| workload | n | variant | plain TCP | TLS | TLS ÷ plain | TLS handoff p50 µs (plain) " ..
            "| TLS handoffs ÷ acq (plain) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    }, {}, false
    for _, n in ipairs(w1_sizes) do
        for _, v in ipairs({ "rlk", "baseline" }) do
            local plain = M.w1_cell(picked["w1/" .. n .. "/" .. v])
            local tls = M.w1_cell(picked["w1/" .. n .. "/" .. v .. "-tls"])
            if tls then
                any = true
                local ratio = per(tls.rate, plain and plain.rate)
                out[#out + 1] = string.format("| W1 pairs/s | %d | %s | %s | %s | %s | | |", n, v,
                    fmt(plain and plain.rate, 0), fmt(tls.rate, 0), fmt(ratio, 2))
                if v == "rlk" and (n == 1 or n == 8) then
                    goals[#goals + 1] = { what = "W1 at " .. n .. ": rlk over TLS ÷ over TCP pairs/s",
                                          target = "≥ " .. fmt(M.TLS_W1_GOAL, 2),
                                          measured = fmt(ratio, 2),
                                          ok = M.meets(ratio, ">=", M.TLS_W1_GOAL) }
                    local raw = M.w1_cell(picked["w1/" .. n .. "/baseline-tls"])
                    if raw then
                        local r = per(tls.rate, raw.rate)
                        goals[#goals + 1] = { what = "W1 at " .. n ..
                                                  ": rlk over TLS ÷ raw hiredis over TLS pairs/s",
                                              target = "≥ " .. fmt(M.TLS_RAW_GOAL, 2),
                                              measured = fmt(r, 2),
                                              ok = M.meets(r, ">=", M.TLS_RAW_GOAL) }
                    end
                end
            end
        end
    end
    for _, mode in ipairs({ { key = "w2", name = "W2 threads" }, { key = "w2p", name = "W2 processes" } }) do
        for _, n in ipairs(w2_sizes) do
            for _, v in ipairs({ "rlk", "baseline" }) do
                local plain = M.w2_cell(picked[mode.key .. "/" .. n .. "/" .. v], hold_ms)
                local tls = M.w2_cell(picked[mode.key .. "/" .. n .. "/" .. v .. "-tls"], hold_ms)
                if tls then
                    any = true
                    out[#out + 1] = string.format("| %s acq/s | %d | %s | %s | %s | %s | %s (%s) | %s (%s) |",
                        mode.name, n, v, fmt(plain and plain.rate, 0), fmt(tls.rate, 0),
                        fmt(per(tls.rate, plain and plain.rate), 2), fmt(tls.p50, 0),
                        fmt(plain and plain.p50, 0), fmt(tls.handoff_frac, 2),
                        fmt(plain and plain.handoff_frac, 2))
                    if v == "rlk" and mode.key == "w2p" and n == 32 then
                        goals[#goals + 1] = { what = "W2 processes at " .. n ..
                                                  ": rlk over TLS handoffs ÷ acq",
                                              target = "≥ 0.99", measured = fmt(tls.handoff_frac, 2),
                                              ok = M.meets(tls.handoff_frac, ">=", 0.99) }
                    end
                end
            end
        end
    end
    if not any then
        return {}, {}
    end
    return out, goals
end

-- ------------------------------------------------------------------ async

-- The non-blocking API beside the blocking one, from variants
-- rlk-async (rlk-bench --api async) and, for W1, rlk-lockw1 (the blocking
-- lock calls, --w1-lock; else rlk, which calls the scripts by rlk_evalv) of
-- the same run. Goals: W1 async pairs/s >= 0.95 x blocking at every size;
-- W2 async handoff p50 and p99 no worse than blocking; async handoffs >=
-- 0.9 of acquisitions. CPU: the client's user + system time per pair or
-- per handoff. Empty when the run had no rlk-async variant.
M.ASYNC_W1_GOAL = 0.95
M.ASYNC_HANDOFF_GOAL = 0.9
function M.table_async(picked, w1_sizes, w2_sizes, hold_ms)
    local out, goals, any = {
        "| workload | n | blocking | async | async ÷ blocking | blocking p50 / p99 µs " ..
            "| async p50 / p99 µs | async handoffs ÷ acq | CPU µs per op, blocking / async |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    }, {}, false
    for _, n in ipairs(w1_sizes) do
        local ares = picked["w1/" .. n .. "/rlk-async"]
        local bres = picked["w1/" .. n .. "/rlk-lockw1"] or picked["w1/" .. n .. "/rlk"]
        local a, b = M.w1_cell(ares), M.w1_cell(bres)
        if a then
            any = true
            local ratio = per(a.rate, b and b.rate)
            out[#out + 1] = string.format("| W1 pairs/s (blocking: %s) | %d | %s | %s | %s | " ..
                "%s / %s | %s / %s | | %s / %s |",
                bres and bres.variant or "none", n, fmt(b and b.rate, 0), fmt(a.rate, 0),
                fmt(ratio, 2), fmt(b and b.p50, 1), fmt(b and b.p99, 1), fmt(a.p50, 1),
                fmt(a.p99, 1), fmt(bres and bres.result and bres.result.cpu_us_per_pair, 1),
                fmt(ares.result.cpu_us_per_pair, 1))
            goals[#goals + 1] = { what = "W1 at " .. n .. ": async ÷ blocking pairs/s",
                                  target = "≥ " .. fmt(M.ASYNC_W1_GOAL, 2), measured = fmt(ratio, 2),
                                  ok = M.meets(ratio, ">=", M.ASYNC_W1_GOAL) }
        end
    end
    for _, mode in ipairs({ { key = "w2", name = "W2 threads" }, { key = "w2p", name = "W2 processes" } }) do
        for _, n in ipairs(w2_sizes) do
            local ares = picked[mode.key .. "/" .. n .. "/rlk-async"]
            local bres = picked[mode.key .. "/" .. n .. "/rlk"]
            local a, b = M.w2_cell(ares, hold_ms), M.w2_cell(bres, hold_ms)
            if a then
                any = true
                out[#out + 1] = string.format("| %s acq/s | %d | %s | %s | %s | %s / %s | %s / %s | %s | %s / %s |",
                    mode.name, n, fmt(b and b.rate, 0), fmt(a.rate, 0),
                    fmt(per(a.rate, b and b.rate), 2), fmt(b and b.p50, 1), fmt(b and b.p99, 1),
                    fmt(a.p50, 1), fmt(a.p99, 1), fmt(a.handoff_frac, 2),
                    fmt(bres and bres.result and bres.result.cpu_us_per_handoff, 1),
                    fmt(ares.result.cpu_us_per_handoff, 1))
                local where = mode.name .. " at " .. n .. ": async "
                goals[#goals + 1] = { what = where .. "handoff p50 µs (≤ blocking's)",
                                      target = "≤ " .. fmt(b and b.p50, 1), measured = fmt(a.p50, 1),
                                      ok = M.meets(a.p50, "<=", b and b.p50) }
                goals[#goals + 1] = { what = where .. "handoff p99 µs (≤ blocking's)",
                                      target = "≤ " .. fmt(b and b.p99, 1), measured = fmt(a.p99, 1),
                                      ok = M.meets(a.p99, "<=", b and b.p99) }
                goals[#goals + 1] = { what = where .. "handoffs ÷ acq",
                                      target = "≥ " .. fmt(M.ASYNC_HANDOFF_GOAL, 2),
                                      measured = fmt(a.handoff_frac, 2),
                                      ok = M.meets(a.handoff_frac, ">=", M.ASYNC_HANDOFF_GOAL) }
            end
        end
    end
    if not any then
        return {}, {}
    end
    return out, goals
end

-- ------------------------------------------------------------------ main

local function sizes_of(text)
    local sizes = {}
    for n in (text or ""):gmatch("%d+") do
        sizes[#sizes + 1] = tonumber(n)
    end
    return sizes
end

-- Under the step table: the two round trips W2 is read against.
M.PING_NOTE = "PING: p50 of 200 PINGs sent back to back on the setup connection before the run "
    .. "(the round trip the goal rows count in). PING after a hold: p50 of PINGs each sent right "
    .. "after sleeping the hold (--hold-ms), as a W2 release is sent: a client that slept, to a "
    .. "server that was idle; no release round trip can be shorter. Handoff p50 (PINGs / PINGs "
    .. "after a hold) divides by each. PUBLISH after a hold → message: p50 of PUBLISHes each sent "
    .. "right after sleeping the hold, to the message read on a second connection of the same "
    .. "thread: the floor of release → message for any release that wakes by pub/sub. Server "
    .. "µs ÷ acq: the server's own time for the commands clients sent (INFO commandstats; a "
    .. "script's includes the commands it calls), divided by the acquisitions: the release's "
    .. "share of it runs before its message leaves."

local NOTE = "commands/…: every command the server ran per acquisition (those inside scripts "
    .. "included; INFO, SCRIPT, CONFIG, CLIENT and the setup's DELs excluded), divided by every "
    .. "acquisition made (W2: the lines of --events-out, after-deadline drain included); "
    .. "top-level: the commands clients sent (EVALSHA/EVAL, SUBSCRIBE/UNSUBSCRIBE, PING). "
    .. "(disturbed): hold p99 far above the hold; run again."

function M.report(dir, opts, out, warn)
    local runs = M.load_runs(dir)
    local picked = M.median_runs(runs)
    local w1, g1 = M.table_w1(picked, sizes_of(opts.w1))
    local w1us, g0 = M.table_server_us(picked, sizes_of(opts.w1))
    local w1calls, g6 = M.table_w1_calls(picked, sizes_of(opts.w1))
    local w1kinds, g7 = M.table_w1_kinds(picked, sizes_of(opts.w1))
    local w2, g2 = M.table_w2(picked, sizes_of(opts.w2), tonumber(opts.hold_ms) or 1)
    local w2p, g3 = M.table_w2_modes(picked, sizes_of(opts.w2), tonumber(opts.hold_ms) or 1)
    local tls, g4 = M.table_tls(picked, sizes_of(opts.w1), sizes_of(opts.w2),
                                tonumber(opts.hold_ms) or 1)
    local async, g5 = M.table_async(picked, sizes_of(opts.w1), sizes_of(opts.w2),
                                    tonumber(opts.hold_ms) or 1)
    local goals = {}
    for _, g in ipairs(g1) do goals[#goals + 1] = g end
    for _, g in ipairs(g6) do goals[#goals + 1] = g end
    for _, g in ipairs(g7) do goals[#goals + 1] = g end
    for _, g in ipairs(g0) do goals[#goals + 1] = g end
    for _, g in ipairs(g2) do goals[#goals + 1] = g end
    for _, g in ipairs(g3) do goals[#goals + 1] = g end
    for _, g in ipairs(g4) do goals[#goals + 1] = g end
    for _, g in ipairs(g5) do goals[#goals + 1] = g end
    local rep = tonumber(opts["repeat"]) or 1
    out(string.format("redis-server %s%s; %s s per run%s; %s", opts.version or "?",
        opts.pinned == "1" and " pinned to CPU 0, rlk-bench to CPU 1" or " (unpinned)",
        opts.duration or "?", rep > 1 and (", median of " .. rep .. " by rate") or "",
        opts.date or os.date("%Y-%m-%d %H:%M:%S")))
    out("")
    out(table.concat(w1, "\n"))
    out("")
    if #w1calls > 0 then
        out(table.concat(w1calls, "\n"))
        out("")
    end
    if #w1kinds > 0 then
        out(table.concat(w1kinds, "\n"))
        out("")
    end
    if #w1us > 4 then
        out(table.concat(w1us, "\n"))
        out("")
    end
    out(table.concat(w2, "\n"))
    out("")
    if #w2p > 4 then
        out(table.concat(w2p, "\n"))
        out("")
    end
    if #tls > 0 then
        out(table.concat(tls, "\n"))
        out("")
    end
    if #async > 0 then
        out("### The non-blocking API beside the blocking one (rlk-async)")
        out("")
        out(table.concat(async, "\n"))
        out("")
    end
    local wake = M.table_w2_wake(picked, sizes_of(opts.w2))
    if #wake > 4 then
        out(table.concat(wake, "\n"))
        out("")
        out(M.PING_NOTE)
        out("")
    end
    local by_command = M.table_w2_commands(picked, sizes_of(opts.w2))
    if #by_command > 4 then
        out(table.concat(by_command, "\n"))
        out("")
    end
    local kinds = M.table_w2_kinds(picked, sizes_of(opts.w2), tonumber(opts.hold_ms) or 1)
    if #kinds > 0 then
        out(table.concat(kinds, "\n"))
        out("")
    end
    local many = M.table_w2_many(picked, sizes_of(opts.w2), tonumber(opts.hold_ms) or 1)
    if #many > 0 then
        out(table.concat(many, "\n"))
        out("")
    end
    out(table.concat(M.table_goals(goals), "\n"))
    out("")
    out(NOTE)
    if opts.json_out and opts.json_out ~= "" then
        local f = assert(io.open(opts.json_out, "w"))
        for _, res in ipairs(runs) do
            f:write(M.json_encode(res), "\n")
        end
        f:close()
    end
    return M.verdict(runs, warn)
end

local function main(args)
    if args[1] ~= "report" or not args[2] then
        io.stderr:write("usage: bench_report.lua report DIR [key=value...]\n")
        return 2
    end
    local opts = {}
    for i = 3, #args do
        local k, v = args[i]:match("^([%w_]+)=(.*)$")
        if k then
            opts[k] = v
        end
    end
    return M.report(args[2], opts, print, function(msg) io.stderr:write(msg, "\n") end)
end

if ... == "bench_report" then
    return M
end
os.exit(main({ ... }))
