-- check-perf-page.lua - docs/performance.md stays the page a user reads: short, and every table
-- on it names the command that reproduces it.
--
--   luajit tools/check-perf-page.lua [--expect N] [FILE]      (FILE: docs/performance.md; - reads stdin)
--
-- Two kinds of problem are reported, one line each ("FILE:LINE: ..."):
--   the length   the page has MAX_LINES (300) lines or more: the history of how a number moved
--                belongs in the commit log, not on the page;
--   a table      a Markdown table (a line starting with "|" followed by a delimiter row such as
--                "| --- | ---: |", outside fenced code) with no command in the text right before
--                it: since the end of the previous table or the previous heading, whichever is
--                later. A command is an inline code span (which may run over several lines) or a
--                line of a fenced code block whose text starts with "tools/", "rlk-bench" or
--                "build/", after an optional "$ " prompt and "taskset -c CPUS " pinning.
-- Exits 1 when there is any problem.
--
-- With --expect N (the controls), it passes only when exactly N problems are found: ctest
-- docs_perf_page_control runs it on tools/testdata/perf-page-control.md, which plants tables
-- without a command beside tables with one, and docs_perf_page_control_long on a copy of the page
-- made 300 lines longer.

local MAX_LINES = 300
local PREFIXES = { "tools/", "rlk-bench", "build/" }

local expect
local file = "docs/performance.md"
local i = 1
while i <= #arg do
  if arg[i] == "--expect" then
    expect = tonumber(arg[i + 1])
    if not expect then
      io.stderr:write("check-perf-page: --expect needs a number\n")
      os.exit(2)
    end
    i = i + 2
  else
    file = arg[i]
    i = i + 1
  end
end

local text
if file == "-" then
  text = io.read("*a")
  file = "(stdin)"
else
  local fh = io.open(file, "rb")
  if not fh then
    io.stderr:write("check-perf-page: cannot read " .. file .. "\n")
    os.exit(2)
  end
  text = fh:read("*a")
  fh:close()
end

local lines = {}
for line in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
local tail = text:match("([^\n]+)$")            -- a last line without its newline
if tail then lines[#lines + 1] = tail end

-- Is this text (a code span's or a fenced line's) a command?
local function is_command(code)
  code = code:gsub("%s+", " "):gsub("^ ", "")
  code = code:gsub("^%$ ", "")
  code = code:gsub("^taskset %-c [%d,%-]+ ", "")
  for _, p in ipairs(PREFIXES) do
    if code:sub(1, #p) == p then return true end
  end
  return false
end

-- Does the region (lines from..to, their fenced flags given) hold a command?
local function has_command(from, to, fenced)
  local prose = {}
  for n = from, to do
    if fenced[n] then
      if is_command(lines[n]) then return true end
      prose[#prose + 1] = ""                   -- a code span does not run through a fence
    else
      prose[#prose + 1] = lines[n]
    end
  end
  for code in table.concat(prose, "\n"):gmatch("`([^`]+)`") do
    if is_command(code) then return true end
  end
  return false
end

local function is_delimiter(line)
  return line and line:match("^%s*|") and line:match("^[%s|:%-]+$") and line:find("%-%-%-")
    and true or false
end

local problems = 0
local function report(n, msg)
  print(file .. ":" .. n .. ": " .. msg)
  problems = problems + 1
end

if #lines >= MAX_LINES then
  report(#lines, string.format("the page has %d lines; it must stay under %d (what was measured,"
    .. " on what, the tables and their commands; how a number moved belongs in the commit log)",
    #lines, MAX_LINES))
end

-- Mark the lines of fenced code blocks (the fence lines included).
local fenced, open = {}, nil
for n, line in ipairs(lines) do
  local fence = line:match("^%s*(```+)") or line:match("^%s*(~~~+)")
  if open then
    fenced[n] = true
    if fence and fence:sub(1, 1) == open:sub(1, 1) and #fence >= #open then open = nil end
  elseif fence then
    fenced[n] = true
    open = fence
  end
end

local tables = 0
local start = 1                                -- where the text before the next table starts
local n = 1
while n <= #lines do
  local line = lines[n]
  if fenced[n] then
    n = n + 1
  elseif line:match("^#+%s") then
    start = n + 1
    n = n + 1
  elseif line:match("^%s*|") and is_delimiter(lines[n + 1]) and not fenced[n + 1] then
    tables = tables + 1
    if not has_command(start, n - 1, fenced) then
      report(n, "a table with no command before it: put the command line that reproduces it"
        .. " (`tools/...`, `rlk-bench ...` or `build/...`) in the text right above the table")
    end
    n = n + 2
    while n <= #lines and not fenced[n] and lines[n]:match("^%s*|") do n = n + 1 end
    start = n
  else
    n = n + 1
  end
end

local failed = problems > 0
if expect then                                 -- a control: exactly the planted problems
  failed = problems ~= expect
  print(("control: %d problem(s) found, %d planted: %s"):format(problems, expect,
    failed and "FAILED" or "the check fails as it must"))
elseif failed then
  print(("check-perf-page: %d problem(s) in %s"):format(problems, file))
else
  print(("check-perf-page: %s: %d lines, %d tables, each with its command"):format(file, #lines,
    tables))
end
os.exit(failed and 1 or 0)
