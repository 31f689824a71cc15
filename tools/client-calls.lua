-- SPDX-License-Identifier: BSD-3-Clause
-- client-calls.lua - the call graph between the modules of one layer of c/src, read from the
-- compiled objects (nm: what each object defines and what it needs), and its cycles.
--
--   luajit tools/client-calls.lua OBJ_DIR [--src SRC_DIR] [--allow A+B,...] [--edges]
--                                 [--control [--back LOW,HIGH]]
--
-- OBJ_DIR holds the layer's objects (build/c/CMakeFiles/rlk_obj.dir/src/client). A file is in the
-- module of its header: x.c with x.h beside it (in SRC_DIR, c/src/client by default) is module x;
-- x_y.c without a header of its own is part of module x (pool_fence.c is pool's). An arrow A -> B
-- means A calls (or reads) something B defines. Prints the arrows with --edges, then every cycle
-- (strongly connected group of modules). Exit 1 when a group is not allowed: --allow names the
-- groups c/src/README.md justifies, each as its modules joined by '+' in any order. --control:
-- the same graph with one arrow back up added (clock -> client, as if the clock called the
-- client; --back LOW,HIGH names another pair, for another layer) must show a cycle that is not
-- allowed; exit 0 when it does, 1 when the check missed it.
local objdir, srcdir, allow, show_edges, control
local back_from, back_to = "clock", "client"
local i = 1
while i <= #arg do
    local a = arg[i]
    if a == "--src" then srcdir = arg[i + 1]; i = i + 1
    elseif a == "--allow" then allow = arg[i + 1]; i = i + 1
    elseif a == "--edges" then show_edges = true
    elseif a == "--control" then control = true
    elseif a == "--back" then
        back_from, back_to = (arg[i + 1] or ""):match("^([%w_]+),([%w_]+)$"); i = i + 1
        if not back_from then io.stderr:write("client-calls: --back LOW,HIGH\n"); os.exit(2) end
    elseif not objdir then objdir = a
    else io.stderr:write("client-calls: unexpected argument ", a, "\n"); os.exit(2) end
    i = i + 1
end
if not objdir then
    io.stderr:write("usage: luajit tools/client-calls.lua OBJ_DIR [--src SRC_DIR] [--allow A+B,...] [--edges]\n")
    os.exit(2)
end
srcdir = srcdir or (debug.getinfo(1, "S").source:match("^@(.*)/tools/[^/]*$") or ".") .. "/c/src/client"

local function exists(p)
    local f = io.open(p, "r")
    if f then f:close() return true end
    return false
end

local function lines(cmd)
    local p = assert(io.popen(cmd))
    local t = {}
    for l in p:lines() do t[#t + 1] = l end
    p:close()
    return t
end

local function module_of(base)
    if exists(srcdir .. "/" .. base .. ".h") then return base end
    local head = base:match("^(.-)_[^_]+$")
    if head and exists(srcdir .. "/" .. head .. ".h") then return head end
    return base
end

local defs, needs, mods = {}, {}, {}
for _, o in ipairs(lines("ls " .. objdir .. "/*.o 2>/dev/null")) do
    local base = o:match("([^/]+)%.c%.o$") or o:match("([^/]+)%.o$")
    local m = module_of(base)
    mods[m] = true
    needs[m] = needs[m] or {}
    for _, l in ipairs(lines("nm " .. o)) do
        local t, sym = l:match("^%s*%x*%s+(%a)%s+(%S+)$")
        if t == "U" then needs[m][sym] = true
        elseif t and t:match("[TDBRC]") then defs[sym] = m end
    end
end
if not next(mods) then
    io.stderr:write("client-calls: no objects in ", objdir, "\n")
    os.exit(2)
end

local names = {}
for m in pairs(mods) do names[#names + 1] = m end
table.sort(names)

local out = {}
for _, m in ipairs(names) do
    out[m] = {}
    for sym in pairs(needs[m]) do
        local to = defs[sym]
        if to and to ~= m then out[m][to] = true end
    end
end

if control then
    if not (out[back_from] and out[back_to]) then
        io.stderr:write("client-calls: --control needs modules ", back_from, " and ", back_to, "\n")
        os.exit(2)
    end
    out[back_from][back_to] = true
end

local narrows = 0
for _, m in ipairs(names) do
    local to = {}
    for t in pairs(out[m]) do to[#to + 1] = t end
    table.sort(to)
    narrows = narrows + #to
    if show_edges then print(string.format("%-12s -> %s", m, table.concat(to, " "))) end
end

-- Tarjan's strongly connected components.
local index, low, onstack, stack, n, groups = {}, {}, {}, {}, 0, {}
local function visit(v)
    n = n + 1
    index[v], low[v] = n, n
    stack[#stack + 1] = v
    onstack[v] = true
    local to = {}
    for t in pairs(out[v]) do to[#to + 1] = t end
    table.sort(to)
    for _, w in ipairs(to) do
        if not index[w] then
            visit(w)
            low[v] = math.min(low[v], low[w])
        elseif onstack[w] then
            low[v] = math.min(low[v], index[w])
        end
    end
    if low[v] == index[v] then
        local g = {}
        repeat
            local w = table.remove(stack)
            onstack[w] = nil
            g[#g + 1] = w
        until w == v
        if #g > 1 then table.sort(g); groups[#groups + 1] = g end
    end
end
for _, m in ipairs(names) do if not index[m] then visit(m) end end

local allowed = {}
for spec in (allow or ""):gmatch("[^,]+") do
    local g = {}
    for m in spec:gmatch("[^+]+") do g[#g + 1] = m end
    table.sort(g)
    allowed[table.concat(g, "+")] = true
end

print(string.format("client-calls: %d modules, %d arrows, %d cycle group(s)", #names, narrows, #groups))
local bad = 0
for _, g in ipairs(groups) do
    local key = table.concat(g, "+")
    local ok = allowed[key]
    if not ok then bad = bad + 1 end
    -- the arrows inside the group, so that a reader sees why it is a cycle
    local inner = {}
    for _, a in ipairs(g) do
        for _, b in ipairs(g) do
            if out[a][b] then inner[#inner + 1] = a .. "->" .. b end
        end
    end
    print(string.format("  cycle %s (%s): %s", key, ok and "allowed" or "NOT ALLOWED",
                        table.concat(inner, " ")))
end
if control then
    if bad > 0 then
        print("client-calls: control: the added arrow " .. back_from .. " -> " .. back_to ..
              " makes a cycle, found as it should be")
        os.exit(0)
    end
    print("client-calls: control: an added arrow " .. back_from .. " -> " .. back_to ..
          " was NOT found in a cycle")
    os.exit(1)
end
os.exit(bad == 0 and 0 or 1)
