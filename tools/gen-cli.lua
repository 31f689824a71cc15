-- SPDX-License-Identifier: BSD-3-Clause
-- gen-cli.lua: what is made from c/cli/commands.lua, the one description of rlk's command line.
--
--   luajit tools/gen-cli.lua                 write c/cli/help_gen.c and help_gen.h (rlk --help's
--                                            options, exit codes and environment, and every
--                                            rlk CMD --help), c/cli/rlk.bash (the bash
--                                            completion) and docs/cli.md's generated tables
--   luajit tools/gen-cli.lua --check         exit 1 naming each of them that differs from what
--                                            would be written (ctest cli_docs_fresh)
--   luajit tools/gen-cli.lua --man DATADIR DOCDIR
--                                            print the man page's EXIT STATUS, ENVIRONMENT, FILES
--                                            and SEE ALSO (roff), with the install's paths
--                                            (tools/gen-man)
--
-- <repo> is the directory above this file. docs/cli.md keeps its prose: only the text between a
-- "<!-- generated: WHAT ... -->" line and the next "<!-- end generated -->" line is rewritten.
-- Exit 2: usage error, or docs/cli.md lacks a marker.

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
local root = here == "tools" and "." or here:match("^(.*)/tools$") or here .. "/.."

local M = {}
M.root = root

function M.load(path)
  return dofile(path or (root .. "/c/cli/commands.lua"))
end

-- ---------------------------------------------------------------- text

-- The words of text in lines of at most width characters.
function M.wrap(text, width)
  local lines, line = {}, nil
  for w in text:gmatch("%S+") do
    if line and #line + 1 + #w > width then
      lines[#lines + 1] = line
      line = w
    else
      line = line and (line .. " " .. w) or w
    end
  end
  if line then lines[#lines + 1] = line end
  return lines
end

-- An option as help and docs name it: "-w, --wait SECONDS", "--url URL", "--json".
function M.spec(o)
  local names = {}
  for _, n in ipairs(o) do names[#names + 1] = n end
  local s = table.concat(names, ", ")
  if o.arg then s = s .. " " .. o.arg end
  return s
end

-- Every name of an option ("-w", "--wait").
function M.names(o)
  local t = {}
  for _, n in ipairs(o) do t[#t + 1] = n end
  return t
end

-- "  SPEC      text..." with the text from column col (a SPEC too long: text on the next line).
local function help_entry(out, spec, text, col, width)
  local lines = M.wrap(text, width - col)
  local first = "  " .. spec
  if #first + 1 > col then
    out[#out + 1] = first
    first = nil
  end
  for k, l in ipairs(lines) do
    if k == 1 and first then
      out[#out + 1] = first .. string.rep(" ", col - #first) .. l
    else
      out[#out + 1] = string.rep(" ", col) .. l
    end
  end
end

-- The part of `rlk --help` after its command list: options, TLS options, exit codes, the
-- environment; lines without their newline.
function M.help_lines(D)
  local out = { "Options (accepted before the command or after it):" }
  for _, o in ipairs(D.options) do
    if not o.tls then help_entry(out, M.spec(o), o.help, 24, 80) end
  end
  out[#out + 1] = "TLS (rediss://, rediss+cluster://, rediss+sentinel://; docs/tls.md):"
  for _, o in ipairs(D.options) do
    if o.tls then help_entry(out, M.spec(o), o.help, 24, 80) end
  end
  out[#out + 1] = ""
  out[#out + 1] = "Exit codes:"
  for _, e in ipairs(D.exits) do
    -- "  N  text": two spaces after the code, also for 10 and 11 (the tests read it so).
    local head = string.format("  %d  ", e[1])
    for k, l in ipairs(M.wrap(e.help, 74)) do
      out[#out + 1] = (k == 1 and head or "     ") .. l
    end
  end
  out[#out + 1] = ""
  out[#out + 1] = "Environment:"
  for _, v in ipairs(D.environment) do
    help_entry(out, table.concat(M.names(v), ", "), v.help, 24, 80)
  end
  return out
end

-- ---------------------------------------------------------------- rlk CMD --help

local HELP_WIDTH = 86

-- The flags a text names: "--wait", "-w", ...
local function flags_in(text, into)
  for f in text:gmatch("%f[%w%-](%-%-?%a[%w%-]*)") do into[f] = true end
  return into
end

-- Problems of command c's help against its options: a list of messages (empty: none).
function M.help_problems(D, c)
  local h, bad = D.help and D.help[c.name], {}
  if not h then return { "rlk " .. c.name .. " has no help (M.help." .. c.name .. ")" } end
  local named = {}
  for _, u in ipairs(h.usage or {}) do flags_in(u, named) end
  for _, part in ipairs(h) do
    if type(part) == "table" and not part.pre then
      for _, e in ipairs(part) do flags_in(e.pre or e[1], named) end
    end
  end
  local known = {}
  for _, o in ipairs(c.options) do
    for _, n in ipairs(o) do
      known[n] = true
      if not named[n] then
        bad[#bad + 1] = "rlk " .. c.name .. "'s help does not name its option " .. n
      end
    end
  end
  for _, list in ipairs({ D.options, D.alone }) do
    for _, o in ipairs(list) do
      for _, n in ipairs(o) do known[n] = true end
    end
  end
  for n in pairs(named) do
    if not known[n] then
      bad[#bad + 1] = "rlk " .. c.name .. "'s help names " .. n .. ", not an option of it"
    end
  end
  table.sort(bad)
  return bad
end

-- The text of `rlk CMD --help`, lines without their newline.
function M.command_help_lines(D, c)
  local h = D.help[c.name]
  local out = {}
  for k, u in ipairs(h.usage) do
    out[#out + 1] = (k == 1 and "usage: " or "       ") .. u
  end
  for _, part in ipairs(h) do
    out[#out + 1] = ""
    if type(part) == "string" then
      for _, l in ipairs(M.wrap(part, HELP_WIDTH)) do out[#out + 1] = l end
    elseif part.pre then
      for l in (part.pre .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = l end
    else
      if part.title then out[#out + 1] = part.title end
      for _, e in ipairs(part) do
        if e.pre then
          for l in (e.pre .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = l end
        elseif e[2] == "" then
          out[#out + 1] = "  " .. e[1]
        else
          help_entry(out, e[1], e[2], part.col or 24, HELP_WIDTH)
        end
      end
      if part.footer then
        for _, l in ipairs(M.wrap(part.footer, HELP_WIDTH)) do out[#out + 1] = l end
      end
    end
  end
  return out
end

local function c_string(s)
  return '"' .. s:gsub('\\', '\\\\'):gsub('"', '\\"') .. '\\n"'
end

function M.help_h(D)
  local out = {
    "/* SPDX-License-Identifier: BSD-3-Clause */",
    "/*",
    " * help_gen.h - made by tools/gen-cli.lua from c/cli/commands.lua: do not edit. The help texts",
    " * of rlk (help_gen.c): the part of `rlk --help` after its list of commands (the options every",
    " * command takes, the exit codes and the environment) and each command's `rlk CMD --help`.",
    " */",
    "#ifndef RLK_CLI_HELP_GEN_H",
    "#define RLK_CLI_HELP_GEN_H",
    "",
    "/* Lines ending in '\\n', printed after the list of commands. */",
    "extern const char rlk_cli_help_text[];",
    "",
    "/* rlk CMD --help and rlk help CMD: the whole text, lines ending in '\\n'. */",
  }
  for _, c in ipairs(D.commands) do
    out[#out + 1] = "extern const char rlk_cli_help_" .. c.name .. "[];"
  end
  out[#out + 1] = ""
  out[#out + 1] = "#endif"
  return table.concat(out, "\n") .. "\n"
end

function M.help_c(D)
  local out = {
    "/* SPDX-License-Identifier: BSD-3-Clause */",
    "/* help_gen.c - made by tools/gen-cli.lua from c/cli/commands.lua: do not edit. */",
    '#include "help_gen.h"',
    "",
    "/* rlk --help after its list of commands: the options, exit codes and environment. */",
    "const char rlk_cli_help_text[] =",
  }
  local lines = M.help_lines(D)
  for k, l in ipairs(lines) do
    out[#out + 1] = "    " .. c_string(l) .. (k == #lines and ";" or "")
  end
  for _, c in ipairs(D.commands) do
    out[#out + 1] = ""
    out[#out + 1] = "/* rlk " .. c.name .. " --help, rlk help " .. c.name .. " */"
    out[#out + 1] = "const char rlk_cli_help_" .. c.name .. "[] ="
    lines = M.command_help_lines(D, c)
    for k, l in ipairs(lines) do
      out[#out + 1] = "    " .. c_string(l) .. (k == #lines and ";" or "")
    end
  end
  return table.concat(out, "\n") .. "\n"
end

-- ---------------------------------------------------------------- bash completion

local function words_of(list)
  return table.concat(list, " ")
end

-- `case` patterns, at most about 90 columns a line.
local function case_pattern(list)
  return table.concat(list, "|")
end

-- What the completion offers for an option's value: a compgen call, or "return 0" (free text).
local function value_action(o)
  if type(o.value) == "table" then
    return 'mapfile -t COMPREPLY < <(compgen -W "' .. words_of(o.value) .. '" -- "$cur"); return 0'
  elseif o.value == "file" then
    return 'mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return 0'
  elseif o.value == "dir" then
    return 'mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return 0'
  end
  return "return 0"
end

-- Options with a value grouped by what is offered for it: { {action, {names...}}, ... }.
local function value_groups(opts)
  local groups, by = {}, {}
  for _, o in ipairs(opts) do
    if o.arg then
      local a = value_action(o)
      if not by[a] then
        by[a] = { a, {} }
        groups[#groups + 1] = by[a]
      end
      for _, n in ipairs(o) do table.insert(by[a][2], n) end
    end
  end
  return groups
end

local function all_names(opts)
  local t = {}
  for _, o in ipairs(opts) do
    for _, n in ipairs(o) do t[#t + 1] = n end
  end
  return t
end

-- words (a list) as lines of a bash string, indented.
local function word_lines(list, indent, width)
  local lines = M.wrap(table.concat(list, " "), width)
  return table.concat(lines, "\n" .. indent)
end

function M.bash(D)
  local cmds, names = {}, {}
  for _, c in ipairs(D.commands) do
    cmds[#cmds + 1] = c.name
    names[#names + 1] = c.name
  end
  cmds[#cmds + 1] = "help"
  local global_with_value = {}
  for _, o in ipairs(D.options) do
    if o.arg then
      for _, n in ipairs(o) do global_with_value[#global_with_value + 1] = n end
    end
  end
  local global_words = all_names(D.options)
  local alone = all_names(D.alone)
  local o = {}
  local function add(s) o[#o + 1] = s end
  add("# SPDX-License-Identifier: BSD-3-Clause")
  add("# bash completion for rlk -*- shell-script -*-")
  add("# Made by tools/gen-cli.lua from c/cli/commands.lua (the one description of rlk's options):")
  add("# do not edit. Installed as share/bash-completion/completions/rlk; needs nothing but bash (the")
  add("# bash-completion package loads it on demand, or `source` it). tools/gen-completion makes the")
  add("# zsh and fish files from it.")
  add("")
  add('_rlk_commands="' .. words_of(cmds) .. '"')
  add("# The options every command takes, before the command or after it.")
  add('_rlk_global="' .. word_lines(global_words, "             ", 86) .. '"')
  add("")
  add("_rlk()")
  add("{")
  add('    local cur=${COMP_WORDS[COMP_CWORD]} prev=""')
  add('    local cmd="" i w words=()')
  add('    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}')
  add("    COMPREPLY=()")
  add("")
  add("    # The command: the first word after rlk that is not an option (or a global option's")
  add("    # value); and whether the cursor is past `--` (the command to run).")
  add("    for ((i = 1; i < COMP_CWORD; i++)); do")
  add("        w=${COMP_WORDS[i]}")
  add('        if [ "$w" = "--" ] && [ -n "$cmd" ]; then')
  add('            if [ $((i + 1)) -eq "$COMP_CWORD" ]; then')
  add('                mapfile -t COMPREPLY < <(compgen -c -- "$cur")')
  add("            else")
  add('                mapfile -t COMPREPLY < <(compgen -f -- "$cur")')
  add("            fi")
  add("            return 0")
  add("        fi")
  add('        if [ -z "$cmd" ]; then')
  add("            case $w in")
  add("                " .. case_pattern(global_with_value) .. ") ((i++)) ;;")
  add("                -*) ;;")
  add("                *) cmd=$w ;;")
  add("            esac")
  add("        fi")
  add("    done")
  add("")
  add("    # Option values: the command's own options first (rlk eval --key is not the TLS --key).")
  add("    case $cmd in")
  for _, c in ipairs(D.commands) do
    local groups = value_groups(c.options)
    if #groups > 0 then
      add("        " .. c.name .. ")")
      add("            case $prev in")
      for _, g in ipairs(groups) do
        add("                " .. case_pattern(g[2]) .. ") " .. g[1] .. " ;;")
      end
      add("            esac ;;")
    end
  end
  add("    esac")
  add("    case $prev in")
  for _, g in ipairs(value_groups(D.options)) do
    add("        " .. case_pattern(g[2]) .. ") " .. g[1] .. " ;;")
  end
  add("    esac")
  add("")
  add("    case $cmd in")
  add('        "")')
  add('            words="$_rlk_commands $_rlk_global ' .. words_of(alone) .. '" ;;')
  add("        help)")
  add('            words="' .. words_of(names) .. '" ;;')
  for _, c in ipairs(D.commands) do
    add("        " .. c.name .. ")")
    if c.script_names then
      add("            if [[ $cur != -* ]]; then")
      add("                # Script names, from the binary being completed.")
      add('                mapfile -t COMPREPLY < <(compgen -W "$("${COMP_WORDS[0]}" scripts list 2>/dev/null |')
      add("                    awk 'NR > 1 {print $1}')\" -- \"$cur\")")
      add("                return 0")
      add("            fi")
    end
    if c.words and c.words_first then
      add('            if [[ $cur != -* ]] && [ "$prev" = ' .. c.name .. " ]; then")
      add('                mapfile -t COMPREPLY < <(compgen -W "' .. words_of(c.words) .. '" -- "$cur")')
      add("                return 0")
      add("            fi")
    end
    local list = {}
    if c.words and not c.words_first then
      for _, w in ipairs(c.words) do list[#list + 1] = w end
    end
    for _, n in ipairs(all_names(c.options)) do list[#list + 1] = n end
    if c.runs then list[#list + 1] = "--" end
    list[#list + 1] = "--help"
    add('            words="' .. word_lines(list, "                   ", 80) .. ' $_rlk_global" ;;')
  end
  add("        *)")
  add("            return 0 ;;")
  add("    esac")
  add('    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")')
  add("    return 0")
  add("}")
  add("")
  add("complete -F _rlk rlk")
  return table.concat(o, "\n") .. "\n"
end

-- ---------------------------------------------------------------- docs/cli.md

local function md_cell(s)
  return (s:gsub("|", "\\|"))
end

-- The generated parts of docs/cli.md by name: lines of markdown.
function M.doc_parts(D)
  local parts = {}
  local t = { "| option | meaning |", "| --- | --- |" }
  for _, o in ipairs(D.options) do
    local spec = {}
    for k, n in ipairs(o) do
      spec[#spec + 1] = "`" .. n .. ((k == #o and o.arg) and (" " .. o.arg) or "") .. "`"
    end
    t[#t + 1] = "| " .. table.concat(spec, ", ") .. " | " .. md_cell(o.doc) .. " |"
  end
  parts.options = t
  t = { "| code | meaning |", "| --- | --- |" }
  for _, e in ipairs(D.exits) do
    t[#t + 1] = "| " .. e[1] .. " | " .. md_cell(e.doc) .. " |"
  end
  parts.exits = t
  t = { "| variable | meaning |", "| --- | --- |" }
  for _, v in ipairs(D.environment) do
    local names = {}
    for _, n in ipairs(v) do names[#names + 1] = "`" .. n .. "`" end
    t[#t + 1] = "| " .. table.concat(names, ", ") .. " | " .. md_cell(v.doc) .. " |"
  end
  parts.environment = t
  t = { "| command | its options |", "| --- | --- |" }
  for _, c in ipairs(D.commands) do
    local specs = {}
    for _, o in ipairs(c.options) do
      for k, n in ipairs(o) do
        specs[#specs + 1] = "`" .. n .. ((k == #o and o.arg) and (" " .. o.arg) or "") .. "`"
      end
    end
    t[#t + 1] = "| `rlk " .. c.name .. "` | " .. table.concat(specs, ", ") .. " |"
  end
  parts.commands = t
  return parts
end

-- text with every generated part replaced; nil and a message when a marker is missing.
function M.docs(D, text)
  local parts = M.doc_parts(D)
  local out, seen, skipping = {}, {}, false
  for line in (text .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do
    local what = line:match("^<!%-%- generated: (%a+) ")
    if what then
      if not parts[what] then return nil, "unknown generated part '" .. what .. "'" end
      out[#out + 1] = line
      for _, l in ipairs(parts[what]) do out[#out + 1] = l end
      seen[what], skipping = true, true
    elseif line:match("^<!%-%- end generated %-%->") then
      skipping = false
      out[#out + 1] = line
    elseif not skipping then
      out[#out + 1] = line
    end
  end
  if skipping then return nil, "a generated part has no end marker" end
  for name in pairs(parts) do
    if not seen[name] then return nil, "no '<!-- generated: " .. name .. " ...' marker" end
  end
  return table.concat(out, "\n") .. "\n"
end

-- ---------------------------------------------------------------- man page

function M.roff(s)
  s = s:gsub("\\", "\\e"):gsub("%-", "\\-")
  return (s:gsub("^([.'])", "\\&%1"))
end

local function paths(s, datadir, docdir)
  return (s:gsub("@DATADIR@", datadir):gsub("@DOCDIR@", docdir))
end

function M.man(D, datadir, docdir)
  local o = {}
  local function add(s) o[#o + 1] = s end
  add(".SH EXIT STATUS")
  for _, e in ipairs(D.exits) do
    add(".TP")
    add(tostring(e[1]))
    add(M.roff(e.help))
  end
  add(".SH ENVIRONMENT")
  for _, v in ipairs(D.environment) do
    add(".TP")
    add(".B " .. table.concat(M.names(v), "\\fR, \\fB"):gsub("%-", "\\-"))
    add(M.roff(v.help))
  end
  add(".SH FILES")
  for _, f in ipairs(D.files) do
    add(".TP")
    add(".I " .. M.roff(paths(f[1], datadir, docdir)))
    add(M.roff(paths(f.help, datadir, docdir)))
  end
  add(".SH SEE ALSO")
  local refs = {}
  for k, p in ipairs(D.see_also.pages) do
    local name, sec = p:match("^(.-)%((%d)%)$")
    refs[#refs + 1] = ".BR " .. M.roff(name) .. " (" .. sec .. ")" .. (k < #D.see_also.pages and "," or ".")
  end
  for _, r in ipairs(refs) do add(r) end
  add(".PP")
  add(M.roff("The guides under " .. docdir .. ": " .. table.concat(D.see_also.docs, ", ") .. "."))
  return table.concat(o, "\n") .. "\n"
end

-- ---------------------------------------------------------------- files

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local function write(path, s)
  local tmp = path .. ".tmp"
  local f = assert(io.open(tmp, "wb"))
  f:write(s)
  f:close()
  assert(os.rename(tmp, path))
end

-- { {path, wanted text}, ... }; nil and a message when docs/cli.md cannot be generated.
function M.outputs(D)
  local bad = {}
  for _, c in ipairs(D.commands) do
    for _, p in ipairs(M.help_problems(D, c)) do bad[#bad + 1] = p end
  end
  for name in pairs(D.help or {}) do
    local found = false
    for _, c in ipairs(D.commands) do found = found or c.name == name end
    if not found then bad[#bad + 1] = "M.help." .. name .. " is no command" end
  end
  if #bad > 0 then return nil, "c/cli/commands.lua: " .. table.concat(bad, "; ") end
  local docs_path = root .. "/docs/cli.md"
  local docs, err = M.docs(D, read(docs_path) or "")
  if not docs then return nil, "docs/cli.md: " .. err end
  return {
    { root .. "/c/cli/help_gen.h", M.help_h(D) },
    { root .. "/c/cli/help_gen.c", M.help_c(D) },
    { root .. "/c/cli/rlk.bash", M.bash(D) },
    { docs_path, docs },
  }
end

local function main()
  local D = M.load()
  if arg[1] == "--man" then
    if not arg[2] or not arg[3] then
      io.stderr:write("usage: gen-cli.lua --man DATADIR DOCDIR\n")
      os.exit(2)
    end
    io.write(M.man(D, arg[2], arg[3]))
    return
  end
  local outs, err = M.outputs(D)
  if not outs then
    io.stderr:write("gen-cli: " .. err .. "\n")
    os.exit(2)
  end
  if arg[1] == "--check" then
    local stale = 0
    for _, o in ipairs(outs) do
      if read(o[1]) ~= o[2] then
        stale = stale + 1
        print("gen-cli: " .. o[1] .. " is not what c/cli/commands.lua makes: run luajit tools/gen-cli.lua"
              .. " (and edit c/cli/commands.lua, not the generated text)")
      end
    end
    if stale > 0 then os.exit(1) end
    print("gen-cli: help_gen.h, help_gen.c, rlk.bash and docs/cli.md's tables are what c/cli/commands.lua makes")
    return
  end
  if arg[1] then
    io.stderr:write("usage: gen-cli.lua [--check | --man DATADIR DOCDIR]\n")
    os.exit(2)
  end
  for _, o in ipairs(outs) do
    if read(o[1]) ~= o[2] then
      write(o[1], o[2])
      print("gen-cli: wrote " .. o[1])
    end
  end
end

-- As a module (require from tools/check-cli-docs.lua): the functions only.
if ... == "gen-cli" then return M end
main()
