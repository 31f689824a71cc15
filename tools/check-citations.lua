-- check-citations.lua - no comment, script or page cites the project's internal tracker, its
-- work sessions, the day something was done or the commit it was done on.
--
--   luajit tools/check-citations.lua [--expect N] [PATH...]
--
-- Code, comments and docs are written for a reader who has neither the tracker nor the history
-- of the work: they say what a thing does and why, never which tracker entry asked for it or
-- when it was done. Four kinds of citation are reported, one line each ("FILE:LINE: ..."):
--   a tracker entry  the word "issue" or "issues", then a number, with or without "#" or "-":
--                    the number is what gives it away ("issues 2^53-1", a verb, is not one);
--   a work session   "this", "last", "previous", "earlier", "next" or "that" before
--                    "session", and "session's start" after "the";
--   a date           an ISO date 20YY-MM-DD (month 01-12, day 01-31) standing alone: not part
--                    of a longer run of digits, letters, dots or dashes (a version "8.0.6", a
--                    UUID, "2026-11-230" are not dates). A measurement says how to reproduce
--                    it, not when it was taken. debian/changelog is exempt (its dates are the
--                    format's own, and RFC 2822 anyway);
--   a commit         "on main", "tree", "commit" or "build" (whole words), an optional
--                    backtick, then 7 to 40 hex digits standing alone that hold at least one
--                    digit and one letter a-f (a short hash, with or without backticks): a
--                    plain number ("build 1000000 keys") or a word ("build defaced") is not one.
-- A file where "session" is a name of the code would be listed in SESSION_TERM, exempt from the
-- session rule only; none is now.
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
local SESSION_TERM = {}
local DATE_EXEMPT = { ["debian/changelog"] = true }
local COMMIT_WORDS = { "on main", "tree", "commit", "build" }
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
local function citations(line, session_rule, date_rule)
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
  if date_rule then
    -- 20YY-MM-DD, with nothing of a longer token on either side (a dash after it counts only
    -- when a letter or digit follows: a range of two dates joined by " - " gives two reports).
    for s, y, m, d, e in line:gmatch("()(20%d%d)%-(%d%d)%-(%d%d)()") do
      local before = s > 1 and line:sub(s - 1, s - 1) or ""
      local after = line:sub(e, e + 1)
      local mm, dd = tonumber(m), tonumber(d)
      if not before:find("[%w%.%-_]") and not after:find("^[%w_]") and not after:find("^[%.%-]%w")
          and mm >= 1 and mm <= 12 and dd >= 1 and dd <= 31 then
        found[#found + 1] = "cites a date: '" .. y .. "-" .. m .. "-" .. d .. "'"
      end
    end
  end
  for _, word in ipairs(COMMIT_WORDS) do
    local pat = "%f[%a]" .. word:gsub(" ", "%%s+") .. "%s+`?()(%x+)()"
    for s, hex, e in lower:gmatch(pat) do
      local nxt = lower:sub(e, e)
      if #hex >= 7 and #hex <= 40 and hex:find("%d") and hex:find("%a")
          and not nxt:find("[%w_]") then
        found[#found + 1] = "cites a commit: '" .. word .. " " .. line:sub(s, e - 1) .. "'"
      end
    end
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
      local session_rule, date_rule = not SESSION_TERM[f], not DATE_EXEMPT[f]
      for line in (text .. "\n"):gmatch("([^\n]*)\n") do
        n = n + 1
        for _, c in ipairs(citations(line, session_rule, date_rule)) do
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
    .. " why (and how a number was measured), not which tracker entry, work session, day or"
    .. " commit it came from", total, #files))
  os.exit(1)
end
print(string.format("check-citations: %d files, no citation", #files))
