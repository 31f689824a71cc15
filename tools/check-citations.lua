-- check-citations.lua - no comment, script or page cites the project's internal tracker or its
-- work sessions.
--
--   luajit tools/check-citations.lua [--expect N] [PATH...]
--
-- Code, comments and docs are written for a reader who has neither the tracker nor the history
-- of the work: they say what a thing does and why, never which tracker entry asked for it or
-- when it was done. Two kinds of citation are reported, one line each ("FILE:LINE: ..."):
--   a tracker entry  the word "issue" or "issues", then a number, with or without "#" or "-":
--                    the number is what gives it away ("issues 2^53-1", a verb, is not one);
--   a work session   "this", "last", "previous", "earlier", "next" or "that" before
--                    "session", and "session's start" after "the".
-- The word "session" is a name of the code in a few files (the RedLock I/O session of
-- c/src/multi/redlock_io.*); those files are exempt from the session rule only (SESSION_TERM).
--
-- PATHs are files or directories (default: the tree's sources, scripts, specs, tools, docs and
-- packaging, as listed in DEFAULT_PATHS, from the current directory, without the control file);
-- build directories and .git are skipped. Exits 1 when there is any citation.
--
-- With --expect N (the control), it passes only when exactly N citations are found: ctest
-- citations_control runs it on tools/testdata/citations-control.md, which plants N of them.

local DEFAULT_PATHS = { "CMakeLists.txt", "README.md", "c", "scripts", "spec", "tools", "docs",
  "debian", ".ci", ".busted", ".luacheckrc" }
local SKIP = { "^build", "/build", "^%.git/", "/%.git/",
  "%.png$", "%.jpg$", "%.gz$", "%.deb$", "%.so[%.%d]*$", "%.a$", "%.o$" }
local SESSION_TERM = { ["c/src/multi/redlock_io.c"] = true, ["c/src/multi/redlock_io.h"] = true }
local SESSION_BEFORE = { this = true, last = true, previous = true, earlier = true, next = true,
  that = true }

local expect
local paths = {}
local i = 1
while i <= #arg do
  if arg[i] == "--expect" then
    expect = tonumber(arg[i + 1])
    i = i + 2
  else
    paths[#paths + 1] = arg[i]
    i = i + 1
  end
end
if #paths == 0 then
  paths = DEFAULT_PATHS
  SKIP[#SKIP + 1] = "tools/testdata/citations%-control%.md$"   -- named only by the control
end

local function skipped(path)
  for _, p in ipairs(SKIP) do
    if path:find(p) then return true end
  end
  return false
end

local files = {}
for _, p in ipairs(paths) do
  local h = assert(io.popen("find '" .. p .. "' -type f 2>/dev/null | sort"))
  for f in h:lines() do
    f = f:gsub("^%./", "")
    if not skipped(f) then files[#files + 1] = f end
  end
  h:close()
end

-- The citations in one line, as strings to print.
local SESSION_START = "the session" .. "'s start"
local function citations(line, session_rule)
  local found = {}
  local lower = line:lower()
  -- a tracker entry: issue(s) [#|-] digits, not followed by '^' (a power: "issues 2^53")
  local pos = 1
  while true do
    local s, e = lower:find("%f[%a]issues?[%s#%-]*%d+", pos)
    if not s then break end
    if lower:sub(e + 1, e + 1) ~= "^" then
      found[#found + 1] = "cites a tracker entry: '" .. line:sub(s, e) .. "'"
    end
    pos = e + 1
  end
  if session_rule then
    for s, word, e in lower:gmatch("()(%a+)%s+session()") do
      if SESSION_BEFORE[word] then
        found[#found + 1] = "cites a work session: '" .. line:sub(s, e - 1) .. "'"
      end
    end
    local s, e = lower:find(SESSION_START, 1, true)
    if s then found[#found + 1] = "cites a work session: '" .. line:sub(s, e) .. "'" end
  end
  return found
end

local total = 0
for _, f in ipairs(files) do
  local fh = io.open(f, "rb")
  if fh then
    local text = fh:read("*a")
    fh:close()
    if not text:find("%z") then               -- text files only
      local n = 0
      local session_rule = not SESSION_TERM[f]
      for line in (text .. "\n"):gmatch("([^\n]*)\n") do
        n = n + 1
        for _, c in ipairs(citations(line, session_rule)) do
          print(f .. ":" .. n .. ": " .. c)
          total = total + 1
        end
      end
    end
  end
end

if expect then
  local ok = total == expect
  print(string.format("control: %d citation(s) found, %d planted: %s", total, expect,
    ok and "the check fails as it must" or "FAILED"))
  os.exit(ok and 0 or 1)
end
if total > 0 then
  print(string.format("check-citations: %d citation(s) in %d files: say what the code does and"
    .. " why, not which tracker entry or work session it came from", total, #files))
  os.exit(1)
end
print(string.format("check-citations: %d files, no citation", #files))
