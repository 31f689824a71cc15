-- check-doc-flags.lua - the flags the docs name for `rlk ...` commands exist.
--
--   luajit tools/check-doc-flags.lua RLK_BINARY DOC.md...
--
-- For every page it collects the `rlk COMMAND ...` the page shows - lines of fenced code blocks
-- (with or without a "$ " prompt) and inline code spans - and, in docs/cli.md-style pages, the
-- first cell of option tables under a "## `rlk COMMAND ...`" heading. Every flag such a command
-- line names before its "--" (after it come the locked command's own arguments), and every flag
-- of those table cells, must appear in `rlk COMMAND --help` or in `rlk --help` (the options every
-- command takes). A command word rlk does not know is reported too. Environment variables are
-- checked where a page speaks of the environment ($RLK_X, RLK_X=..., a line that says
-- "environment"): such an `RLK_*` name must appear in some `--help` text or as a code span in
-- docs/cli.md (passed as the first page), where the commands' environment is documented.
--
-- With --expect-only FLAG (the control: a page naming a made-up flag), it passes only when the
-- check found exactly that one problem.
--
-- Prints one line per problem ("FILE:LINE: rlk lock: --made-up-flag is not in `rlk lock --help`")
-- and exits 1 when there is any; prints a summary and exits 0 otherwise.

-- The control: with --expect-only FLAG, it passes (exit 0) only when the pages have exactly one
-- problem and that problem names FLAG.
local expect_only
if arg[1] == "--expect-only" then
  expect_only = arg[2]
  table.remove(arg, 1)
  table.remove(arg, 1)
end
local rlk = arg[1]
if not rlk or not arg[2] then
  io.stderr:write("usage: check-doc-flags.lua [--expect-only FLAG] RLK_BINARY DOC.md...\n")
  os.exit(2)
end

local function run(cmdline)
  local p = assert(io.popen(cmdline .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  return out
end

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- The flags a help text names: -x and --long-name tokens.
local function flags_of(text)
  local set = {}
  for f in text:gmatch("%f[%w%-]%-%-?[%a][%w%-]*") do
    set[f] = true
  end
  return set
end

-- The flags a help text shows with a value ("--name NAME", "-w, --wait SECONDS"): in a command
-- line, the word after them is that value, not a flag ("--name -x").
local function value_flags_of(text)
  local set = {}
  for f in text:gmatch("%f[%w%-](%-%-?[%a][%w%-]*) %u[%u_]+") do
    set[f] = true
  end
  for short, long in text:gmatch("%f[%w%-](%-%a), (%-%-[%a][%w%-]*) %u[%u_]+") do
    set[short], set[long] = true, true
  end
  return set
end

local global_help = run(shell_quote(rlk) .. " --help")
local global_flags = flags_of(global_help)
local commands = {}
for name in global_help:gmatch("\n  (%l+) +[^\n]+") do
  commands[name] = true
end
if not commands.lock then
  io.stderr:write("check-doc-flags: `rlk --help` lists no commands:\n" .. global_help)
  os.exit(2)
end

local help_cache = {}
local function help_of(cmd)
  if not help_cache[cmd] then
    local text = run(shell_quote(rlk) .. " " .. cmd .. " --help")
    help_cache[cmd] = { text = text, flags = flags_of(text), values = value_flags_of(text) }
  end
  return help_cache[cmd]
end

local problems, checked, last_problem = 0, 0, ""
local env_known = {}
for v in global_help:gmatch("RLK_[%u_]+") do env_known[v] = true end
for cmd in pairs(commands) do
  for v in help_of(cmd).text:gmatch("RLK_[%u_]+") do env_known[v] = true end
end

local function problem(file, line, msg)
  problems = problems + 1
  last_problem = msg
  print(string.format("%s:%d: %s", file, line, msg))
end

local function check_flag(file, line, cmd, flag)
  checked = checked + 1
  if help_of(cmd).flags[flag] or global_flags[flag] then return end
  problem(file, line, string.format("rlk %s: %s is not in `rlk %s --help` nor `rlk --help`",
                                    cmd, flag, cmd))
end

-- Global options that take a value, which may come before the command word.
local global_with_value = { ["--url"] = true, ["--url-file"] = true, ["--password-file"] = true }

-- A command line "rlk ..." (text after "rlk "): checks its command word and flags.
local function check_command_line(file, line, text)
  local words = {}
  for w in text:gmatch("%S+") do words[#words + 1] = w end
  local i = 1
  while words[i] and words[i]:sub(1, 1) == "-" do
    local flag = words[i]:match("^(%-%-?[%w%-]+)")
    if flag and not global_flags[flag] and flag:match("^%-%-?%a") then
      checked = checked + 1
      problem(file, line, string.format("rlk: %s is not in `rlk --help`", flag))
    end
    i = i + ((global_with_value[flag] and not words[i]:find("=")) and 2 or 1)
  end
  local cmd = words[i]
  if not cmd or not cmd:match("^%l[%l%-]*$") or cmd == "help" then return end
  if not commands[cmd] then
    problem(file, line, string.format("rlk %s: no such command", cmd))
    return
  end
  local values = help_of(cmd).values
  local k = i + 1
  while k <= #words do
    local w = words[k]
    if w == "--" then break end
    local flag = w:match("^[%[%(|]*(%-%-?%a[%w%-]*)")
    if flag then check_flag(file, line, cmd, flag) end
    k = k + ((flag and values[flag] and not w:find("=", 1, true)) and 2 or 1)
  end
end

-- Option-table rows of a "## `rlk CMD ...`" section: | `-w`, `--wait SECONDS` | meaning |
local function check_table_row(file, line, cmd, row)
  local first = row:match("^|([^|]*)|")
  if not first then return end
  for span in first:gmatch("`([^`]*)`") do
    for flag in span:gmatch("%f[%w%-](%-%-?%a[%w%-]*)") do
      check_flag(file, line, cmd, flag)
    end
  end
end

-- Only where the text speaks of the environment: `$RLK_X`, `RLK_X=...`, or a line that says
-- "environment" (error codes and C constants share the RLK_ prefix).
local function check_env(file, line, text)
  local speaks = text:lower():find("environ", 1, true) ~= nil
  for pre, v, post in text:gmatch("(.?)(RLK_[%u_]+)(.?)") do
    if (speaks or pre == "$" or post == "=") and not env_known[v] then
      problem(file, line, string.format("%s is not a variable rlk reads or sets", v))
    end
  end
end

local function check_page(file, is_reference)
  local f = assert(io.open(file, "r"))
  local in_code, section_cmd = false, nil
  local n = 0
  for line in f:lines() do
    n = n + 1
    if line:match("^```") then
      in_code = not in_code
    elseif in_code then
      local cmdline = line:match("^%$ rlk (.*)$") or line:match("^rlk (.*)$")
      if cmdline then check_command_line(file, n, cmdline) end
      if cmdline and not is_reference then check_env(file, n, cmdline) end
    else
      local heading = line:match("^##+ `rlk (%l[%l%-]*)")
      if heading then
        section_cmd = commands[heading] and heading or nil
      elseif line:match("^## ") then
        section_cmd = nil
      end
      for span in line:gmatch("`rlk ([^`]*)`") do check_command_line(file, n, span) end
      if section_cmd and line:match("^|") and not line:match("^| %-%-%- ") then
        check_table_row(file, n, section_cmd, line)
      end
      if not is_reference then check_env(file, n, line) end
    end
  end
  f:close()
end

-- docs/cli.md (the first page) is where the command environment is documented: its RLK_*
-- names count as known for the other pages.
local first = assert(io.open(arg[2], "r"))
for v in first:read("*a"):gmatch("`(RLK_[%u_]+)`") do env_known[v] = true end
first:close()

for k = 2, #arg do
  check_page(arg[k], k == 2)
end
if expect_only then
  local named = last_problem:find(expect_only .. " ", 1, true) ~= nil
  if problems == 1 and named then
    print("check-doc-flags: control passed: the made-up flag " .. expect_only .. " was caught, nothing else")
    os.exit(0)
  end
  print(string.format("check-doc-flags: control FAILED: %d problem(s), expected exactly one naming %s",
                      problems, expect_only))
  os.exit(1)
end
if problems > 0 then
  print(string.format("check-doc-flags: %d problem(s) in %d page(s)", problems, #arg - 1))
  os.exit(1)
end
print(string.format("check-doc-flags: %d flags in %d page(s) are in rlk's --help", checked, #arg - 1))
