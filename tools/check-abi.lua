-- check-abi.lua - librlk.so exports exactly the API of the installed headers, and the ABI listing
-- says so.
--
--   luajit tools/check-abi.lua [--expect NAME...] --nm NM --so LIBRLK.so --symbols c/abi/librlk.symbols
--          --version X.Y.Z HEADER.h...
--
-- Three lists of names must be equal:
--   declared  every function (and extern variable) declared at file scope in the HEADERs (the
--             installed headers, c/include/*.h; static inline functions of the adapters are the
--             program's own code and not counted), read by a small C declaration parser;
--   exported  `NM -D --defined-only LIBRLK.so`: the shared library's dynamic symbols;
--   listed    the first word of every line of the ABI listing (c/abi/librlk.symbols; # comments).
-- Every declaration must also carry the RLK_API mark (c/include/rlk_export.h), which is what makes
-- the function visible under -fvisibility=hidden.
--
-- Prints one line per difference, each naming the file to change, and exits 1 when there is any;
-- prints a summary and exits 0 otherwise.
--
-- With --expect NAME... (the control), it passes only when the check fails and every NAME appears
-- in its report: ctest abi_control runs it on a copy of the library that exports one internal
-- function and on a header that declares one function the library does not define.

local expect = {}
local opt = { headers = {} }
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == "--expect" then
    expect[#expect + 1] = arg[i + 1]
    i = i + 2
  elseif a == "--nm" or a == "--so" or a == "--symbols" or a == "--version" then
    opt[a:sub(3)] = arg[i + 1]
    i = i + 2
  else
    opt.headers[#opt.headers + 1] = a
    i = i + 1
  end
end
if not (opt.nm and opt.so and opt.symbols and opt.version) or #opt.headers == 0 then
  io.stderr:write("usage: check-abi.lua [--expect NAME...] --nm NM --so LIB.so --symbols FILE"
    .. " --version X.Y.Z HEADER.h...\n")
  os.exit(2)
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- The file-scope declarations of one header: { name = { marked = bool } }.
local function declarations(path)
  local src = read(path)
  src = src:gsub("/%*.-%*/", function(c) return (c:gsub("[^\n]", " ")) end)
  src = src:gsub("//[^\n]*", "")
  src = src:gsub("\\\n", " ")
  src = src:gsub("\n[ \t]*#[^\n]*", "\n")
  src = src:gsub("^[ \t]*#[^\n]*", "")
  src = src:gsub('extern%s*"C"%s*{', "")   -- C++ guard: its closing brace is under #ifdef, gone
  src = src:gsub('"[^"\n]*"', '""')
  local out, order = {}, {}
  local stmt, depth, body = {}, 0, false
  local function finish()
    local s = table.concat(stmt):gsub("%s+", " "):gsub("^ ", "")
    stmt = {}
    if s == "" or s:match("^typedef") or s:match("^static") then return end
    local marked = s:match("%f[%w_]RLK_API%f[^%w_]") ~= nil
    local name
    local head = s:match("^([^(]*)%(")
    if head and not s:match("^%s*[%w_ ]*%(%s*%*") then
      name = head:match("([%a_][%w_]*)%s*$")      -- a function: the word before its "("
    elseif s:match("^extern") or s:match("^RLK_API") then
      name = s:gsub("%b[]", ""):gsub("=.*", ""):match("([%a_][%w_]*)%s*$")
    end
    if name and not s:match("^struct") and not s:match("^enum") and not s:match("^union") then
      if not out[name] then order[#order + 1] = name end
      out[name] = { marked = marked }
    end
  end
  for c in src:gmatch(".") do
    if c == "{" then
      if depth == 0 then
        local s = table.concat(stmt)
        -- a function definition (static inline): its body ends the statement
        body = s:match("%)%s*$") ~= nil and not s:match("=%s*$")
      end
      depth = depth + 1
      if not body then stmt[#stmt + 1] = c end
    elseif c == "}" then
      depth = depth - 1
      if body then
        if depth == 0 then stmt, body = {}, false end
      else
        stmt[#stmt + 1] = c
      end
    elseif c == ";" and depth == 0 then
      finish()
    elseif not body then
      stmt[#stmt + 1] = c
    end
  end
  return out, order
end

local declared, where = {}, {}
for _, h in ipairs(opt.headers) do
  local d, order = declarations(h)
  for _, name in ipairs(order) do
    declared[name] = d[name]
    where[name] = h
  end
end

local exported = {}
do
  local p = assert(io.popen(opt.nm .. " -D --defined-only '" .. opt.so .. "' 2>&1"))
  for line in p:lines() do
    local typ, name = line:match("^%x*%s+(%a)%s+([%w_.@]+)$")
    if name then
      exported[name:gsub("@.*", "")] = typ
    else
      io.stderr:write("check-abi: unexpected nm line: " .. line .. "\n")
      os.exit(2)
    end
  end
  p:close()
end

local listed = {}
do
  local n = 0
  for line in read(opt.symbols):gmatch("[^\n]+") do
    n = n + 1
    if not line:match("^%s*#") and line:match("%S") then
      local name, version = line:match("^([%a_][%w_]*)%s+(%d+%.%d+%.%d+)%s*$")
      if not name then
        print(opt.symbols .. ":" .. n .. ": not a '<symbol> <version>' line: " .. line)
        os.exit(1)
      end
      listed[name] = version
    end
  end
end

local function sorted(t)
  local r = {}
  for k in pairs(t) do r[#r + 1] = k end
  table.sort(r)
  return r
end

local problems = {}
local function problem(s) problems[#problems + 1] = s end
local so = opt.so:match("[^/]*$")
for _, name in ipairs(sorted(exported)) do
  if not declared[name] then
    problem(so .. " exports " .. name .. ", which no installed header declares: an internal"
      .. " function is visible. Remove RLK_API (or a visibility attribute) from its definition,"
      .. " or declare it in c/include/ if it is meant to be API.")
  end
end
for _, name in ipairs(sorted(declared)) do
  if not exported[name] then
    problem(where[name] .. " declares " .. name .. ", which " .. so .. " does not export:"
      .. (declared[name].marked and " define it in c/src/." or " mark its declaration RLK_API."))
  elseif not declared[name].marked then
    problem(where[name] .. " declares " .. name .. " without RLK_API: mark it"
      .. " (c/include/rlk_export.h).")
  end
end
for _, name in ipairs(sorted(exported)) do
  if declared[name] and not listed[name] then
    problem(name .. " is new API: add the line '" .. name .. " " .. opt.version .. "' to "
      .. opt.symbols .. " (the version it first ships in; docs/abi.md).")
  end
end
for _, name in ipairs(sorted(listed)) do
  if not exported[name] then
    problem(opt.symbols .. " lists " .. name .. " (since " .. listed[name] .. "), which " .. so
      .. " no longer exports: removing a function breaks every program that calls it. Restore it,"
      .. " or make the break on purpose: raise RLK_SOVERSION in c/CMakeLists.txt, rename the"
      .. " package in debian/control and delete the line (docs/abi.md).")
  end
end

for _, p in ipairs(problems) do print(p) end
local report = table.concat(problems, "\n")
if #expect > 0 then
  local ok = #problems > 0
  for _, name in ipairs(expect) do
    if not report:find(name, 1, true) then
      print("control: the report does not name " .. name)
      ok = false
    end
  end
  print(ok and "control: the check fails as it must (" .. #problems .. " problem(s))"
    or "control: FAILED: the check did not catch the planted fault")
  os.exit(ok and 0 or 1)
end
if #problems > 0 then
  print("check-abi: " .. #problems .. " problem(s)")
  os.exit(1)
end
print(string.format("check-abi: %s exports %d symbols = %d declared in %d headers = %d listed in %s",
  so, #sorted(exported), #sorted(declared), #opt.headers, #sorted(listed), opt.symbols))
