-- SPDX-License-Identifier: BSD-3-Clause
-- client-calls.lua - the call graph between the modules of c/src (one layer, or all of it), read
-- from the compiled objects, and its cycles.
--
--   luajit tools/client-calls.lua OBJ_DIR [--src SRC_DIR] [--allow A+B,...] [--edges] [--tables]
--                                 [--control [--back LOW,HIGH]] [--expect-cycle]
--
-- OBJ_DIR holds the objects (build/c/CMakeFiles/rlk_obj.dir/src/client for one layer, .../src for
-- all of them: then each module is named with its layer, engine/engine) and SRC_DIR the sources
-- beside them (c/src/client by default). A file is in the module of its header: x.c with x.h
-- beside it is module x; x_y.c without a header of its own is part of module x (pool_fence.c is
-- pool's). An arrow A -> B means A calls (or reads) something B defines. Prints the arrows with
-- --edges, then every cycle (strongly connected group of modules). Exit 1 when a group is not
-- allowed: --allow names the groups c/src/README.md declares one module, each as its modules
-- joined by '+' in any order (a bigger or smaller group is not allowed).
--
-- The arrows come from three readings (of the objects, and of the sources for who calls through a
-- pointer):
--  * direct calls and reads: nm, what each object defines and what it needs;
--  * calls through a table of function pointers with one filler. A table is a data object whose
--    relocations (objdump -r on its data sections: .data.rel.ro*, .rodata*, .data*) point at
--    functions (by name, or a section and offset that objdump -t names); its type is its
--    variable's in the object's DWARF (readelf --debug-dump=info: const, typedef and array
--    stripped to the struct), each relocation's member the struct member at its offset. The
--    fillers of a type are its tables' entries in every object read (an array of n rows is n
--    fillers; a run on one layer counts that layer's, src_calls all of c/src's). A type with one
--    filler is no variation: a call through it is a direct call to the function that filler puts
--    there. Who makes the call the compiled code does not say (an
--    indirect call names nothing), so the tool takes it from the sources, soundly: a module whose
--    .c files (or the headers of SRC_DIR they include, for inline functions) read the member by
--    name (`->m` or `.m`, comments and strings aside, not `.m =` as in an initialiser) is taken
--    to call that function. A member of the same name in another struct only adds arrows, never
--    hides one. With no DWARF in an object (built without -g) its tables cannot be typed: the
--    tool says so and exits 2 rather than read less;
--  * calls through a hook filled in code with one filler: a statement `x->m = f;` or `x.m = f;`
--    in the sources (f a function of the objects) fills member m; a member filled with one
--    function in all the sources read is read as that table's are. Members are told apart by name
--    only here, so a name filled with two functions anywhere is taken to vary; a function handed
--    as an argument and kept by the callee is not read.
-- --tables prints the tables and hooks it found and the arrows they give.
--
-- --control: the same graph with one arrow back up added (clock -> client, as if the clock called
-- the client; --back LOW,HIGH names another pair, for another layer) must show a cycle that is not
-- allowed; exit 0 when it does, 1 when the check missed it. --expect-cycle: exit 0 when a cycle
-- that is not allowed is found, 1 when none is (the controls on tools/client-calls-fixture: a
-- call back up through a one-filler table, or a one-filler hook, which nm alone does not see).
local objdir, srcdir, allow, show_edges, control, show_tables, expect_cycle
local back_from, back_to = "clock", "client"
local i = 1
while i <= #arg do
    local a = arg[i]
    if a == "--src" then srcdir = arg[i + 1]; i = i + 1
    elseif a == "--allow" then allow = arg[i + 1]; i = i + 1
    elseif a == "--edges" then show_edges = true
    elseif a == "--tables" then show_tables = true
    elseif a == "--control" then control = true
    elseif a == "--expect-cycle" then expect_cycle = true
    elseif a == "--back" then
        back_from, back_to = (arg[i + 1] or ""):match("^([%w_/]+),([%w_/]+)$"); i = i + 1
        if not back_from then io.stderr:write("client-calls: --back LOW,HIGH\n"); os.exit(2) end
    elseif not objdir then objdir = a
    else io.stderr:write("client-calls: unexpected argument ", a, "\n"); os.exit(2) end
    i = i + 1
end
if not objdir then
    io.stderr:write("usage: luajit tools/client-calls.lua OBJ_DIR [--src SRC_DIR] [--allow A+B,...] [--edges]\n")
    os.exit(2)
end
objdir = objdir:gsub("/+$", "")
srcdir = (srcdir or (debug.getinfo(1, "S").source:match("^@(.*)/tools/[^/]*$") or ".") .. "/c/src/client")
    :gsub("/+$", "")

local function exists(p)
    local f = io.open(p, "r")
    if f then f:close() return true end
    return false
end

local function slurp(p)
    local f = io.open(p, "r")
    if not f then return nil end
    local t = f:read("*a")
    f:close()
    return t
end

local function lines(cmd)
    local p = assert(io.popen(cmd))
    local t = {}
    for l in p:lines() do t[#t + 1] = l end
    p:close()
    return t
end

-- An object's directory under OBJ_DIR ("" or "async/") is its source's under SRC_DIR.
local function module_of(sub, base)
    local dir = srcdir .. "/" .. sub
    if exists(dir .. base .. ".h") then return base end
    local head = base:match("^(.-)_[^_]+$")
    if head and exists(dir .. head .. ".h") then return head end
    return base
end

local objs = {}
for _, o in ipairs(lines("find " .. objdir .. " -name '*.o' | sort")) do
    local rel = o:sub(#objdir + 2)
    local sub = rel:match("^(.*/)") or ""
    local base = rel:match("([^/]+)%.c%.o$") or rel:match("([^/]+)%.o$")
    local src = srcdir .. "/" .. sub .. base .. ".c"
    -- An object whose source is gone (a file moved or removed since that build) is stale.
    if exists(src) then
        objs[#objs + 1] = {path = o, sub = sub, base = base, src = src}
    end
end
local layered = false
for _, ob in ipairs(objs) do if ob.sub ~= "" then layered = true end end
for _, ob in ipairs(objs) do
    ob.mod = (layered and ob.sub or "") .. module_of(ob.sub, ob.base)
end

local defs, needs, mods = {}, {}, {}
local funcs = {}                -- global function name -> module
for _, ob in ipairs(objs) do
    local m = ob.mod
    mods[m] = true
    needs[m] = needs[m] or {}
    for _, l in ipairs(lines("nm " .. ob.path)) do
        local t, sym = l:match("^%s*%x*%s+(%a)%s+(%S+)$")
        if t == "U" then needs[m][sym] = true
        elseif t and t:match("[TDBRC]") then
            defs[sym] = m
            if t == "T" then funcs[sym] = m end
        end
    end
end
if not next(mods) then
    io.stderr:write("client-calls: no objects in ", objdir, "\n")
    os.exit(2)
end

-- ---------------------------------------------------------------- tables of function pointers

-- The DWARF of one object: its DIEs by offset (tag, attributes, the members of a struct).
local function dwarf(path)
    local dies, cur, parent_at = {}, nil, {}
    for _, l in ipairs(lines("readelf --debug-dump=info " .. path .. " 2>/dev/null")) do
        local depth, off, tag = l:match("^%s*<(%d+)><(%x+)>: Abbrev Number: %d+ %((DW_TAG_[%w_]+)%)")
        if depth then
            depth = tonumber(depth)
            cur = {tag = tag, at = {}, members = {}}
            dies[tonumber(off, 16)] = cur
            parent_at[depth] = cur
            local p = parent_at[depth - 1]
            if tag == "DW_TAG_member" and p and p.tag == "DW_TAG_structure_type" then
                p.members[#p.members + 1] = cur
            end
        elseif cur then
            local name, val = l:match("^%s*<%x+>%s+(DW_AT_[%w_]+)%s*:%s*(.-)%s*$")
            if name then
                val = val:match("^%(indirect[^)]*%):%s*(.*)$") or val:match("^%(strx%d*[^)]*%):%s*(.*)$") or val
                cur.at[name] = val
            end
        end
    end
    return dies
end

local function ref(dies, v)
    local o = v and v:match("^<0x(%x+)>")
    return o and dies[tonumber(o, 16)]
end

-- A variable's type: const, volatile, typedef and array stripped to a struct; its key (the
-- struct's tag, or the typedef's name for an anonymous struct), its size and its members.
local function struct_of(dies, d)
    local tdname
    for _ = 1, 32 do
        if not d then return nil end
        if d.tag == "DW_TAG_structure_type" then
            local key = d.at.DW_AT_name or tdname
            if not key or d.at.DW_AT_declaration then return nil end
            return {key = key, size = tonumber(d.at.DW_AT_byte_size), members = d.members}
        end
        if d.tag == "DW_TAG_typedef" then tdname = tdname or d.at.DW_AT_name end
        if not (d.tag == "DW_TAG_const_type" or d.tag == "DW_TAG_volatile_type" or
                d.tag == "DW_TAG_typedef" or d.tag == "DW_TAG_array_type") then
            return nil
        end
        d = ref(dies, d.at.DW_AT_type)
    end
end

local function member_at(st, off)
    local best, bo = nil, -1
    for _, mb in ipairs(st.members) do
        local mo = tonumber(mb.at.DW_AT_data_member_location or "0") or 0
        if mo <= off and mo > bo then best, bo = mb.at.DW_AT_name, mo end
    end
    return best
end

local tables = {}               -- {obj, name, key, rows, entries = {{member, func, mod}}}
local ownfn = {}                -- module -> {its functions, static ones included}
local nodwarf = {}
for _, ob in ipairs(objs) do
    local syms = {}             -- section -> {{value, size, name, func}}
    for _, l in ipairs(lines("objdump -t " .. ob.path)) do
        local v, flags, sec, sz, name = l:match("^(%x+)%s(.......)%s(%S+)%s+(%x+)%s+(.+)$")
        if v then
            name = name:gsub("^%.hidden%s+", "")
            if flags:sub(7, 7) == "F" then
                ownfn[ob.mod] = ownfn[ob.mod] or {}
                ownfn[ob.mod][name] = true
            end
            syms[sec] = syms[sec] or {}
            local t = syms[sec]
            t[#t + 1] = {value = tonumber(v, 16), size = tonumber(sz, 16), name = name,
                         func = flags:sub(7, 7) == "F", obj = flags:sub(7, 7) == "O"}
        end
    end
    -- a relocation's target, as a function of this object or a global one, or nil
    local function target(v)
        local name, sign, hex = v:match("^([^+-]+)([+-]?)0?x?(%x*)$")
        if not name then return nil end
        local off = (hex ~= "" and tonumber(hex, 16) or 0) * (sign == "-" and -1 or 1)
        if syms[name] then
            for _, sy in ipairs(syms[name]) do
                if sy.func and sy.value == off then return sy.name, ob.mod end
            end
            return nil
        end
        if off ~= 0 then return nil end
        for _, list in pairs(syms) do
            for _, sy in ipairs(list) do
                if sy.func and sy.name == name then return name, ob.mod end
            end
        end
        if funcs[name] then return name, funcs[name] end
        return nil
    end
    local found, sec = {}, nil
    for _, l in ipairs(lines("objdump -r " .. ob.path)) do
        local s = l:match("^RELOCATION RECORDS FOR %[(.-)%]:")
        if s then
            sec = (s:match("^%.data") or s:match("^%.rodata")) and s or nil
        elseif sec then
            local off, v = l:match("^(%x+)%s+%S+%s+(%S+)$")
            if off then
                local fn, fmod = target(v)
                if fn then
                    off = tonumber(off, 16)
                    for _, sy in ipairs(syms[sec] or {}) do
                        if sy.obj and off >= sy.value and off < sy.value + sy.size then
                            local t = found[sy.name]
                            if not t then
                                t = {obj = ob, name = sy.name, size = sy.size, entries = {}}
                                found[sy.name] = t
                            end
                            t.entries[#t.entries + 1] = {off = off - sy.value, func = fn, mod = fmod}
                        end
                    end
                end
            end
        end
    end
    if next(found) then
        local dies = dwarf(ob.path)
        if not next(dies) then nodwarf[#nodwarf + 1] = ob.path end
        local vars = {}
        for _, d in pairs(dies) do
            if d.tag == "DW_TAG_variable" then
                local spec = ref(dies, d.at.DW_AT_specification) or d
                local name = spec.at.DW_AT_name
                if name and not d.at.DW_AT_declaration then
                    vars[name] = ref(dies, d.at.DW_AT_type or spec.at.DW_AT_type)
                end
            end
        end
        for name, t in pairs(found) do
            local st = struct_of(dies, vars[name])
            if st and st.size and st.size > 0 then
                t.key = st.key
                t.rows = math.floor(t.size / st.size)
                for _, e in ipairs(t.entries) do e.member = member_at(st, e.off % st.size) end
                tables[#tables + 1] = t
            end
        end
    end
end
if #nodwarf > 0 then
    io.stderr:write("client-calls: no DWARF in ", table.concat(nodwarf, " "),
                    ": its tables of function pointers cannot be typed (build with -g)\n")
    os.exit(2)
end

local fillers = {}
for _, t in ipairs(tables) do fillers[t.key] = (fillers[t.key] or 0) + t.rows end
table.sort(tables, function(x, y) return x.key .. x.name < y.key .. y.name end)

-- The sources of each module, comments and strings out, with the headers of SRC_DIR they include.
local function clean(text)
    text = text:gsub("/%*.-%*/", " "):gsub("//[^\n]*", " ")
    text = text:gsub('"[^"\n]*"', '""'):gsub("'[^'\n]*'", "''")
    return text
end
local modsrc = {}
for _, ob in ipairs(objs) do
    local text = slurp(ob.src)
    if text then
        ob.text = clean(text)
        local all = {ob.text}
        for inc in text:gmatch('#include%s+"([^"]+)"') do
            local h = slurp(srcdir .. "/" .. inc) or slurp(srcdir .. "/" .. ob.sub .. inc)
                      or slurp(srcdir .. "/../" .. inc)
            if h then all[#all + 1] = clean(h) end
        end
        modsrc[ob.mod] = (modsrc[ob.mod] or "") .. table.concat(all, "\n")
    end
end
local function reads_member(text, m)
    for pos in text:gmatch("[%.>]%s*" .. m .. "%f[^%w_]()") do
        local rest = text:sub(pos, pos + 2)
        if not rest:match("^%s*=[^=]") then return true end
    end
    return false
end

local through = {}              -- module -> {module -> "table.member"}
local function arrow(m, to, why, fn)
    if m == to then return end
    through[m] = through[m] or {}
    through[m][to] = through[m][to] or why
    if show_tables then print(string.format("  %s -> %s (%s = %s)", m, to, why, fn)) end
end

-- Hooks filled in code: a statement `x->m = f;` or `x.m = f;` (f one of the objects' functions)
-- fills member m. A member filled with one function in all the sources read is no variation
-- either: whoever reads it calls f. Members are told apart by name only, so a name filled with
-- two functions anywhere is taken to vary (the typed tables above do not have that limit).
local hookfill = {}             -- member -> {function -> module}
for _, ob in ipairs(objs) do
    for mem, fn in (ob.text or ""):gmatch("[%.>]%s*([%a_][%w_]*)%s*=%s*&?%s*([%a_][%w_]*)%s*;") do
        local fmod = (ownfn[ob.mod] or {})[fn] and ob.mod or funcs[fn]
        if fmod then
            hookfill[mem] = hookfill[mem] or {}
            hookfill[mem][fn] = fmod
        end
    end
end
local hooknames = {}
for mem in pairs(hookfill) do hooknames[#hooknames + 1] = mem end
table.sort(hooknames)
for _, mem in ipairs(hooknames) do
    local fns = {}
    for fn in pairs(hookfill[mem]) do fns[#fns + 1] = fn end
    table.sort(fns)
    if show_tables then
        print(string.format("hook .%s: %d filler(s) (%s)%s", mem, #fns, table.concat(fns, " "),
                            #fns == 1 and ", read as direct calls" or ""))
    end
    if #fns == 1 then
        local fmod = hookfill[mem][fns[1]]
        for m, text in pairs(modsrc) do
            if reads_member(text, mem) then arrow(m, fmod, "hook ." .. mem, fns[1]) end
        end
    end
end
for _, t in ipairs(tables) do
    local single = fillers[t.key] == 1
    if show_tables then
        print(string.format("table %s (%s, %s): %d filler(s)%s", t.name, t.key, t.obj.mod,
                            fillers[t.key], single and ", read as direct calls" or ""))
    end
    if single then
        for _, e in ipairs(t.entries) do
            if e.member then
                for m, text in pairs(modsrc) do
                    if reads_member(text, e.member) then
                        arrow(m, e.mod, t.name .. "." .. e.member, e.func)
                    end
                end
            end
        end
    end
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
    for to in pairs(through[m] or {}) do out[m][to] = true end
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
if expect_cycle then
    print("client-calls: expected a cycle that is not allowed: " .. (bad > 0 and "found" or "NOT found"))
    os.exit(bad > 0 and 0 or 1)
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
