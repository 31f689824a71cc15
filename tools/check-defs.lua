-- SPDX-License-Identifier: BSD-3-Clause
-- check-defs.lua - every public function has a definition written out in c/src, one that grep and
-- ctags find: no macro generates one.
--
--   luajit tools/check-defs.lua [--src DIR] [--control NAME] HEADER...
--
-- Reads every prototype marked RLK_API in the headers (c/include/rlk.h, rlk_async.h) and looks, in
-- the .c files under DIR (c/src by default), for its definition: a line that starts with the
-- prototype's return type and name, followed by the parameter list and then '{'. A macro that
-- expands to the function (RLK_X_DEF(rlk_fenced)) is no such line. Prints each function without
-- one, then "check-defs: N public functions, M without a written-out definition"; exit 1 when M > 0.
-- --control NAME: the same check on the sources with NAME's definition line replaced, in memory,
-- by a macro use (RLK_PLANTED_DEF(NAME)); exit 0 when the check reports NAME (and only NAME)
-- missing, 1 when it does not.
local srcdir, control
local headers = {}
local i = 1
while i <= #arg do
    local a = arg[i]
    if a == "--src" then srcdir = arg[i + 1]; i = i + 1
    elseif a == "--control" then control = arg[i + 1]; i = i + 1
    else headers[#headers + 1] = a end
    i = i + 1
end
if #headers == 0 or (control and not control:match("^[%w_]+$")) then
    io.stderr:write("usage: luajit tools/check-defs.lua [--src DIR] [--control NAME] HEADER...\n")
    os.exit(2)
end
srcdir = srcdir or "c/src"

local function slurp(path)
    local f, err = io.open(path, "r")
    if not f then io.stderr:write("check-defs: ", err, "\n"); os.exit(2) end
    local s = f:read("*a")
    f:close()
    return s
end

local function norm(s)
    return (s:gsub("%s+", " "):gsub(" ?%* ?", "*"):gsub("^ ", ""):gsub(" $", ""))
end

-- Comments and preprocessor lines blanked (a #define is no prototype nor definition).
local function strip_comments(s)
    s = s:gsub("/%*.-%*/", function(c) return (c:gsub("[^\n]", " ")) end):gsub("//[^\n]*", "")
    s = ("\n" .. s):gsub("\n[ \t]*#[^\n]*", function(d) return (d:gsub("[^\n]", "")) end)
    return s
end

-- The prototypes: name -> return type (normalised), in the headers' order.
local protos, order = {}, {}
for _, h in ipairs(headers) do
    local text = strip_comments(slurp(h))
    for decl in text:gmatch("RLK_API%s+([^;{]-%));") do
        local ret, name = decl:match("^(.-)([%a_][%w_]*)%s*%(")
        if not name then io.stderr:write("check-defs: cannot read ", h, ": ", decl, "\n"); os.exit(2) end
        if not protos[name] then order[#order + 1] = name end
        protos[name] = norm(ret)
    end
end
if #order == 0 then
    io.stderr:write("check-defs: no RLK_API prototype in ", table.concat(headers, " "), "\n")
    os.exit(2)
end

local p = assert(io.popen("find '" .. srcdir .. "' -name '*.c' | LC_ALL=C sort"))
local files = {}
for l in p:lines() do files[#files + 1] = l end
p:close()
if #files == 0 then io.stderr:write("check-defs: no .c file under ", srcdir, "\n"); os.exit(2) end

local planted = false
local found = {}
for _, path in ipairs(files) do
    local text = strip_comments(slurp(path))
    if control then
        local n
        text, n = text:gsub("\n[%a_][^\n#;=]-[%s%*]" .. control .. "%(", "\nRLK_PLANTED_DEF(" .. control .. ")\n(", 1)
        planted = planted or n > 0
    end
    -- a line at column 0: return type, name, '(' ... ')' then '{'
    for pos, ret, name in text:gmatch("\n()([%a_][%w_ %*]-)([%a_][%w_]*)%(") do
        local want = protos[name]
        if want and norm(ret) == want and not ret:match("^static[%s]") then
            local open = pos + #ret + #name
            local close = text:match("^%b()()", open)
            if close and text:match("^%s*{", close) then found[name] = path end
        end
    end
end
if control and not planted then
    io.stderr:write("check-defs: --control: no definition of ", control, " to replace\n")
    os.exit(2)
end

local missing = {}
for _, name in ipairs(order) do
    if not found[name] then
        missing[#missing + 1] = name
        print("  " .. name .. ": no written-out definition in " .. srcdir)
    end
end
print(string.format("check-defs: %d public functions, %d without a written-out definition", #order, #missing))
if control then
    if #missing == 1 and missing[1] == control then
        print("check-defs: control: " .. control .. " as a macro use was found, as it should be")
        os.exit(0)
    end
    print("check-defs: control: expected exactly " .. control .. " to be missing")
    os.exit(1)
end
os.exit(#missing == 0 and 0 or 1)
