-- SPDX-License-Identifier: BSD-3-Clause
-- check-cli-docs.lua: rlk's command line says the same everywhere. Against c/cli/commands.lua
-- (the one description), it compares
--
--   the parser     every option literal of c/cli/*.c and every option of the description, tried
--                  on the binary after each command and before any (`rlk CMD OPT x`): accepted
--                  exactly where the description has it; every variable name the C sources
--                  read or set (getenv, setenv, the credential list) is in the description,
--                  and every code of cli.h's enum rlk_exit;
--   rlk --help     its options, exit codes and environment; `rlk CMD --help`: every option of
--                  CMD on its option lines (or synopsis), and no option the description lacks;
--   the man page   OPTIONS, each command's section, EXIT STATUS, ENVIRONMENT, FILES;
--   completion     what c/cli/rlk.bash offers for `rlk -`, `rlk CMD -`, action words and option
--                  values (zsh and fish ask the same file: tools/check-completion);
--   docs/cli.md    the tables of options, exit codes and environment, and every option of a
--                  command named in its `## \`rlk CMD ...\`` section.
--
-- Any option, exit code or variable one of them has and another lacks is a problem, printed as
-- "check-cli-docs: WHERE lacks WHAT (...)"; exit 1 when there is one.
--
--   luajit tools/check-cli-docs.lua RLK_BINARY MAN_PAGE [--control]
--
-- (run from the repository root). --control: the check, then its control on the same inputs (the
-- binary is tried once: about 1,000 runs of it): drops one option (or code, or variable) at a time
-- from each of the description, `rlk --help`, `rlk CMD --help`, the man page, the completion and
-- docs/cli.md, and passes only when the check passes and every such copy fails it naming what was
-- dropped.

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local gen = require("gen-cli")

local rlk, man_path, mode = arg[1], arg[2], arg[3]
if not rlk or not man_path or (mode and mode ~= "--control") then
  io.stderr:write("usage: check-cli-docs.lua RLK_BINARY MAN_PAGE [--control]\n")
  os.exit(2)
end

local function q(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local function run(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  p:close()
  return out
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function set_of(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

local function sorted(set)
  local t = {}
  for k in pairs(set) do t[#t + 1] = k end
  table.sort(t, function(a, b) return tostring(a) < tostring(b) end)
  return t
end

local function copy(t)
  if type(t) ~= "table" then return t end
  local c = {}
  for k, v in pairs(t) do c[k] = copy(v) end
  return c
end

-- ---------------------------------------------------------------- readers

-- The flags an option line names: "-w, --wait SECONDS   text" -> -w, --wait: flags and their
-- value names (upper case), up to the first other word.
local function line_flags(spec, into)
  for tok in spec:gmatch("%S+") do
    local f = tok:match("^(%-%-?%a[%w%-]*),?$")
    if f then
      into[f] = true
    elseif not tok:match("^[%u_%.%[%]|]+,?$") then
      break
    end
  end
end

-- A usage text: the flags of its synopsis (the lines up to the first blank one) and of its
-- option lines (indented by exactly two spaces, starting with '-').
local function usage_flags(text)
  local set, synopsis = {}, true
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if synopsis then
      if line == "" then
        synopsis = false
      else
        for f in line:gmatch("%f[%w%-](%-%-?%a[%w%-]*)") do set[f] = true end
      end
    elseif line:match("^  %-") then
      line_flags(line:sub(3), set)
    end
  end
  return set
end

-- rlk --help: { options = set, exits = set, env = set }.
local function read_global_help(text)
  local r = { options = {}, exits = {}, env = {} }
  local section
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^Options") or line:match("^TLS") then
      section = "options"
    elseif line:match("^Exit codes") then
      section = "exits"
    elseif line:match("^Environment") then
      section = "env"
    elseif line == "" or line:match("^%S") then
      section = nil
    elseif section == "options" and line:match("^  %-") then
      line_flags(line:sub(3), r.options)
    elseif section == "exits" then
      local code = line:match("^  (%d+)  ")
      if code then r.exits[tonumber(code)] = true end
    elseif section == "env" and line:match("^  [%u_]") then
      local spec = line:sub(3):match("^(.-)%s%s") or line:sub(3)
      for v in spec:gmatch("[%u_]+") do r.env[v] = true end
    end
  end
  return r
end

local function unroff(s)
  return (s:gsub("\\%-", "-"):gsub("\\&", ""):gsub("\\e", "\\"):gsub("\\f[RBI]", ""))
end

-- The man page: { options, commands = {name = set}, exits, env, files = set of paths }.
local function read_man(text)
  local r = { options = {}, commands = {}, exits = {}, env = {}, files = {} }
  local sh, ss, prev, cmdtext = nil, nil, nil, {}
  for raw in (text .. "\n"):gmatch("([^\n]*)\n") do
    local line = unroff(raw)
    if raw:match("^%.SH ") then
      sh, ss = raw:match("^%.SH (.*)$"), nil
    elseif raw:match("^%.SS ") then
      ss = raw:match("^%.SS (.*)$")
      cmdtext[ss] = {}
    elseif sh == "COMMANDS" and ss and not raw:match("^%.") then
      table.insert(cmdtext[ss], line)
    elseif sh == "OPTIONS" and line:match("^%-") then
      line_flags(line, r.options)
    elseif sh == "EXIT STATUS" and prev == ".TP" and line:match("^%d+$") then
      r.exits[tonumber(line)] = true
    elseif sh == "ENVIRONMENT" and raw:match("^%.B ") then
      for v in line:sub(4):gmatch("[%u_]+") do r.env[v] = true end
    elseif sh == "FILES" and raw:match("^%.I ") then
      r.files[line:sub(4)] = true
    end
    prev = raw
  end
  for name, lines in pairs(cmdtext) do
    -- The section's first line is the summary; the usage text follows (.PP .nf ... .fi).
    table.remove(lines, 1)
    r.commands[name] = usage_flags(table.concat(lines, "\n"))
  end
  return r
end

-- What the bash completion offers for the words typed (the last one being completed).
local function complete(bash_file, words_list)
  local script = {
    "source " .. q(bash_file) .. " || exit 3",
  }
  for _, words in ipairs(words_list) do
    local w = {}
    for _, x in ipairs(words) do w[#w + 1] = q(x) end
    script[#script + 1] = "COMP_WORDS=(" .. table.concat(w, " ") .. "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1));"
      .. " COMPREPLY=(); _rlk; echo \"${COMPREPLY[*]}\""
  end
  local out = run("bash -c " .. q(table.concat(script, "\n")) .. " 2>&1")
  local res, k = {}, 0
  for line in (out):gmatch("([^\n]*)\n") do
    k = k + 1
    res[k] = {}
    for w in line:gmatch("%S+") do res[k][w] = true end
  end
  return res
end

-- docs/cli.md's generated tables: { options, exits, env, commands = {name = set of flags} }.
local function read_docs(text)
  local r = { options = {}, exits = {}, env = {}, commands = {} }
  local part
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local what = line:match("^<!%-%- generated: (%a+) ")
    if what then
      part = what
    elseif line:match("^<!%-%- end generated") then
      part = nil
    elseif part and line:match("^| ") and not line:match("^| %-%-%- ") then
      local first, second = line:match("^|([^|]*)|([^|]*)|")
      if part == "commands" then
        local c = first:match("`rlk (%l+)`")
        if c then
          r.commands[c] = {}
          for span in second:gmatch("`([^`]*)`") do line_flags(span, r.commands[c]) end
        end
      elseif part == "options" then
        for span in first:gmatch("`([^`]*)`") do line_flags(span, r.options) end
      elseif part == "exits" then
        local code = first:match("^%s*(%d+)%s*$")
        if code then r.exits[tonumber(code)] = true end
      elseif part == "environment" then
        for v in first:gmatch("`([%u_]+)`") do r.env[v] = true end
      end
    end
  end
  return r
end

-- ---------------------------------------------------------------- the parser

-- Every option literal of c/cli/*.c ("--wait", "-w"), but the help and version words.
local function source_options()
  local set = {}
  for path in run("ls c/cli/*.c"):gmatch("%S+") do
    for lit in read(path):gmatch('"(%-%-?%a[%w%-]*)"') do set[lit] = true end
  end
  for _, w in ipairs({ "-h", "--help", "-V", "--version" }) do set[w] = nil end
  return set
end

-- The variables the C sources read or set: "RLK_X" and "REDISCLI_AUTH" literals but the error
-- names (RLK_ERR_*, RLK_OK, and the scripts' error codes).
local function source_env()
  local codes = {}
  for path in run("find scripts -name '*.lua'"):gmatch("%S+") do
    local s = read(path)
    for c in s:gmatch("error (RLK_[%u_]+)") do codes[c] = true end
    for c in s:gmatch("'(RLK_[%u_]+)") do codes[c] = true end
  end
  local set = {}
  for path in run("ls c/cli/*.c; find c/src -name '*.c'"):gmatch("%S+") do
    for v in read(path):gmatch('"(RLK_[%u_]+)"') do
      if not v:match("^RLK_ERR_") and v ~= "RLK_OK" and not codes[v] then set[v] = true end
    end
    for v in read(path):gmatch('"(REDISCLI_AUTH)"') do set[v] = true end
  end
  return set
end

-- cli.h's exit codes.
local function source_exits()
  local set = {}
  local h = read("c/cli/cli.h"):match("enum rlk_exit%s*(%b{})") or ""
  for n in h:gmatch("RLK_EXIT_[%u_]+%s*=%s*(%d+)") do set[tonumber(n)] = true end
  return set
end

-- For each command ("" = before any): the set of words of `words` the parser takes as an option
-- (not "unknown option 'W'", "unknown OP 'W'" nor "unexpected argument 'W'").
local function probe(commands, words)
  local list = {}
  for _, w in ipairs(words) do list[#list + 1] = q(w) end
  local script = table.concat({
    "export RLK_URL=redis://127.0.0.1:9",
    "for c in " .. table.concat(commands, " ") .. " ''; do",
    "  for w in " .. table.concat(list, " ") .. "; do",
    "    if [ -n \"$c\" ]; then err=$(timeout 20 " .. q(rlk) .. " \"$c\" \"$w\" x 2>&1 >/dev/null </dev/null)",
    "    else err=$(timeout 20 " .. q(rlk) .. " \"$w\" x 2>&1 >/dev/null </dev/null); fi",
    "    case $err in *\"unknown option '$w'\"*|*\"unknown OP '$w'\"*|*\"unexpected argument '$w'\"*) ;;",
    "      *) printf '%s\\t%s\\n' \"${c:-.}\" \"$w\" ;; esac",
    "  done",
    "done",
  }, "\n")
  local accepted = { [""] = {} }
  for _, c in ipairs(commands) do accepted[c] = {} end
  for c, w in run("bash -c " .. q(script)):gmatch("([^\t\n]+)\t([^\n]+)\n") do
    accepted[c == "." and "" or c][w] = true
  end
  return accepted
end

-- ---------------------------------------------------------------- the check

-- inputs: D, parser = {options = {cmd = set}, env, exits}, help = {global text, cmd = text},
-- man text, bash file, docs text. Returns the list of problems.
local function check(I)
  local problems = {}
  local function say(fmt, ...)
    problems[#problems + 1] = string.format(fmt, ...)
  end
  local D = I.D
  local global = {}
  for _, o in ipairs(D.options) do
    for _, n in ipairs(o) do global[n] = true end
  end
  local alone = {}
  for _, o in ipairs(D.alone) do
    for _, n in ipairs(o) do alone[n] = true end
  end
  local opts = {}
  for _, c in ipairs(D.commands) do
    opts[c.name] = {}
    for _, o in ipairs(c.options) do
      for _, n in ipairs(o) do opts[c.name][n] = true end
    end
  end
  local exits, env = {}, {}
  for _, e in ipairs(D.exits) do exits[e[1]] = true end
  for _, v in ipairs(D.environment) do
    for _, n in ipairs(v) do env[n] = true end
  end

  -- Each source's sets against the description's, both ways.
  local function compare(where, have, want, what, allowed)
    for _, x in ipairs(sorted(want)) do
      if not have[x] then say("%s lacks %s %s (the description has it)", where, what, tostring(x)) end
    end
    for _, x in ipairs(sorted(have)) do
      if not want[x] and not (allowed and allowed[x]) then
        say("%s has %s %s, which c/cli/commands.lua lacks", where, what, tostring(x))
      end
    end
  end
  local function union(a, b, c)
    local u = {}
    for _, s in ipairs({ a, b, c or {} }) do
      for k in pairs(s) do u[k] = true end
    end
    return u
  end

  -- Each command's own help: what c/cli/commands.lua makes (help_gen.c), byte for byte, and
  -- the description's help names every option of the command and no other (gen-cli refuses to
  -- write help_gen.c otherwise); no cmd_*.c keeps a help text of its own.
  for _, c in ipairs(D.commands) do
    for _, p in ipairs(gen.help_problems(D, c)) do say("the description: %s", p) end
    if D.help and D.help[c.name] and #gen.help_problems(D, c) == 0 then
      local want = table.concat(gen.command_help_lines(D, c), "\n") .. "\n"
      if I.help[c.name] ~= want then
        say("rlk help %s is not the text c/cli/commands.lua makes (help_gen.c: run luajit "
            .. "tools/gen-cli.lua and rebuild)", c.name)
      end
    end
  end
  for _, f in ipairs(I.cli_usage_texts or {}) do
    say("%s keeps a help text of its own (%s): it belongs in c/cli/commands.lua", f[1], f[2])
  end

  -- The parser.
  compare("the parser (rlk OPT, before a command)", I.parser.options[""], global, "option")
  for _, c in ipairs(D.commands) do
    compare("the parser (rlk " .. c.name .. " OPT)", I.parser.options[c.name],
            union(opts[c.name], global), "option")
  end
  compare("the C sources (getenv, setenv)", I.parser.env, env, "variable")
  compare("cli.h's enum rlk_exit", I.parser.exits, exits, "exit code")

  -- rlk --help and rlk CMD --help.
  local gh = read_global_help(I.help.global)
  compare("rlk --help", gh.options, global, "option")
  compare("rlk --help", gh.exits, exits, "exit code")
  compare("rlk --help", gh.env, env, "variable")
  for _, c in ipairs(D.commands) do
    local have = usage_flags(I.help[c.name])
    compare("rlk " .. c.name .. " --help", have, opts[c.name], "option", union(global, alone))
  end

  -- The man page.
  local m = read_man(I.man)
  compare("the man page's OPTIONS", m.options, global, "option")
  compare("the man page's EXIT STATUS", m.exits, exits, "exit code")
  compare("the man page's ENVIRONMENT", m.env, env, "variable")
  for _, c in ipairs(D.commands) do
    if not m.commands[c.name] then
      say("the man page lacks the command %s", c.name)
    else
      compare("the man page's " .. c.name .. " section", m.commands[c.name], opts[c.name], "option",
              union(global, alone))
    end
  end
  for _, f in ipairs(D.files) do
    local pat = "^" .. f[1]:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0"):gsub("@%u+@", ".-") .. "$"
    local found = false
    for p in pairs(m.files) do
      if p:match(pat) then found = true end
    end
    if not found then say("the man page's FILES lacks %s", f[1]) end
  end

  -- The completion.
  local lines = { { "rlk", "-" }, { "rlk", "help", "" } }
  for _, c in ipairs(D.commands) do
    lines[#lines + 1] = { "rlk", c.name, "-" }
    if c.words then lines[#lines + 1] = { "rlk", c.name, "" } end
    for _, o in ipairs(c.options) do
      if type(o.value) == "table" then lines[#lines + 1] = { "rlk", c.name, o[#o], "" } end
    end
  end
  local got = complete(I.bash, lines)
  local dash = { ["--"] = true }
  compare("the completion of 'rlk -'", got[1], union(global, alone), "option")
  local names = {}
  for _, c in ipairs(D.commands) do names[c.name] = true end
  compare("the completion of 'rlk help '", got[2], names, "command")
  local k = 3
  for _, c in ipairs(D.commands) do
    compare("the completion of 'rlk " .. c.name .. " -'", got[k],
            union(opts[c.name], global, { ["--help"] = true }), "option", dash)
    k = k + 1
    if c.words then
      for _, w in ipairs(c.words) do
        if not got[k][w] then say("the completion of 'rlk %s ' lacks the word %s", c.name, w) end
      end
      k = k + 1
    end
    for _, o in ipairs(c.options) do
      if type(o.value) == "table" then
        compare("the completion of 'rlk " .. c.name .. " " .. o[#o] .. " '", got[k], set_of(o.value), "value")
        k = k + 1
      end
    end
  end

  -- docs/cli.md.
  local d = read_docs(I.docs)
  compare("docs/cli.md's table of options", d.options, global, "option")
  compare("docs/cli.md's table of exit codes", d.exits, exits, "exit code")
  compare("docs/cli.md's table of the environment", d.env, env, "variable")
  for _, c in ipairs(D.commands) do
    if not d.commands[c.name] then
      say("docs/cli.md's table of options by command lacks rlk %s", c.name)
    else
      compare("docs/cli.md's options of rlk " .. c.name, d.commands[c.name], opts[c.name], "option")
    end
  end
  return problems
end

-- ---------------------------------------------------------------- main

local D = gen.load("c/cli/commands.lua")
local commands = {}
for _, c in ipairs(D.commands) do commands[#commands + 1] = c.name end

local universe = source_options()
for _, o in ipairs(D.options) do
  for _, n in ipairs(o) do universe[n] = true end
end
for _, c in ipairs(D.commands) do
  for _, o in ipairs(c.options) do
    for _, n in ipairs(o) do universe[n] = true end
  end
end
local I = {
  D = D,
  parser = { options = probe(commands, sorted(universe)), env = source_env(), exits = source_exits() },
  help = { global = run(q(rlk) .. " --help") },
  man = read(man_path),
  bash = "c/cli/rlk.bash",
  docs = read("docs/cli.md"),
}
for _, c in ipairs(commands) do I.help[c] = run(q(rlk) .. " help " .. c) end
-- Help texts written in C: a static array named *_usage or *_help in c/cli/*.c.
I.cli_usage_texts = {}
for file in run("ls c/cli/*.c"):gmatch("[^\n]+") do
  local src = read(file)
  for name in src:gmatch("static%s+const%s+char%s+([%w_]+_usage)%s*%[%]") do
    table.insert(I.cli_usage_texts, { file, name })
  end
  for name in src:gmatch("static%s+const%s+char%s+([%w_]+_help)%s*%[%]") do
    table.insert(I.cli_usage_texts, { file, name })
  end
end

local checked_ok
do
  local problems = check(I)
  for _, p in ipairs(problems) do print("check-cli-docs: " .. p) end
  checked_ok = #problems == 0
  if checked_ok then
    print(string.format("check-cli-docs: %d commands: the parser, rlk --help, every rlk CMD --help, the "
                        .. "man page, the completion and docs/cli.md agree with c/cli/commands.lua",
                        #commands))
  else
    print(string.format("check-cli-docs: %d problem(s): edit c/cli/commands.lua, the command's usage "
                        .. "text or docs/cli.md, then run luajit tools/gen-cli.lua", #problems))
  end
  if mode ~= "--control" then os.exit(checked_ok and 0 or 1) end
end

-- The control: each copy drops one thing from one source; the check must name it.
local function drop_word(text, word)
  -- a flag (not a longer one: --resize, not --resize-x), also "--name=" forms
  return (text:gsub("%f[%w%-]" .. word:gsub("%-", "%%-") .. "%f[^%w%-]", ""))
end
local function drop_line(text, pat)
  local out = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if not line:find(pat, 1, true) then out[#out + 1] = line end
  end
  return table.concat(out, "\n")
end
local tmp = os.tmpname()
local controls = {
  { "the description lacks semaphore --resize", "--resize", function(J)
      local sem
      for _, c in ipairs(J.D.commands) do if c.name == "semaphore" then sem = c end end
      for k, o in ipairs(sem.options) do if o[1] == "--resize" then table.remove(sem.options, k) end end
    end },
  { "rlk --help lacks --url-file", "--url-file", function(J)
      J.help.global = drop_word(J.help.global, "--url-file") end },
  { "rlk --help lacks exit code 10", "exit code 10", function(J)
      J.help.global = drop_line(J.help.global, "  10  ") end },
  { "rlk --help lacks RLK_NATIVE", "RLK_NATIVE", function(J)
      J.help.global = drop_line(J.help.global, "  RLK_NATIVE") end },
  { "rlk semaphore --help lacks --resize", "--resize", function(J)
      J.help.semaphore = drop_word(J.help.semaphore, "--resize") end },
  { "the description's help of rlk lock lacks --lock-delay", "--lock-delay", function(J)
      for _, part in ipairs(J.D.help.lock) do
        if type(part) == "table" and not part.pre then
          for k = #part, 1, -1 do
            if part[k][1] and part[k][1]:find("--lock-delay", 1, true) then table.remove(part, k) end
          end
        end
      end
    end },
  { "a cmd_*.c keeps its own help text", "cmd_lock.c", function(J)
      table.insert(J.cli_usage_texts, { "c/cli/cmd_lock.c", "lock_usage" }) end },
  { "the man page lacks lock --name", "--name", function(J)
      local a, b = J.man:find("\n%.SS lock\n.-\n%.SS ")
      J.man = J.man:sub(1, a) .. J.man:sub(a + 1, b):gsub("\\%-\\%-name([^%w\\])", "%1") .. J.man:sub(b + 1)
    end },
  { "the man page lacks --keep-env", "--keep-env", function(J)
      J.man = J.man:gsub("\\%-\\%-keep\\%-env([^%w\\])", "%1") end },
  { "the man page lacks exit code 11", "exit code 11", function(J)
      J.man = J.man:gsub("%.TP\n11\n[^\n]*\n", "") end },
  { "the man page lacks RLK_LOCK_VALUES", "RLK_LOCK_VALUES", function(J)
      J.man = drop_line(J.man, ".B RLK_LOCK_VALUES") end },
  { "the completion lacks semaphore --resize", "--resize", function(J)
      local f = assert(io.open(tmp, "wb"))
      f:write((read(J.bash):gsub("(semaphore%)\n.-)%-%-resize ", "%1")))
      f:close()
      J.bash = tmp
    end },
  { "the completion lacks --password-file", "--password-file", function(J)
      local f = assert(io.open(tmp, "wb"))
      f:write((read(J.bash):gsub("(_rlk_global=\"[^\"]*)%-%-password%-file ", "%1")))
      f:close()
      J.bash = tmp
    end },
  { "docs/cli.md lacks semaphore --resize", "--resize", function(J)
      J.docs = J.docs:gsub("(\n| `rlk semaphore` |[^\n]*)`%-%-resize`, ", "%1")
    end },
  { "docs/cli.md's table lacks --verbose", "--verbose", function(J)
      J.docs = drop_line(J.docs, "| `--verbose` |") end },
  { "docs/cli.md's table lacks exit code 6", "exit code 6", function(J)
      J.docs = drop_line(J.docs, "| 6 |") end },
}
local failed = 0
for _, ctl in ipairs(controls) do
  local J = copy(I)
  ctl[3](J)
  local problems = check(J)
  local named = false
  for _, p in ipairs(problems) do
    if p:find(ctl[2], 1, true) then named = true end
  end
  if named then
    print("check-cli-docs --control: caught: " .. ctl[1])
  else
    failed = failed + 1
    print("check-cli-docs --control: NOT caught: " .. ctl[1] .. " (" .. #problems .. " other problem(s))")
    for _, p in ipairs(problems) do print("  " .. p) end
  end
end
os.remove(tmp)
if failed > 0 or not checked_ok then os.exit(1) end
print(string.format("check-cli-docs --control: all %d planted omissions were caught", #controls))
