-- SPDX-License-Identifier: BSD-3-Clause
-- check-compat-replies.lua - docs/compat.md's list of replies that differ from Redisson's is
-- complete and names only replies that exist.
--
--   luajit tools/check-compat-replies.lua [--control] SCRIPTS_DIR COMPAT.md
--
-- Every script header lists its replies (`-- return <shape>: ...`, tools/script_header.lua).
-- REDISSON below says, per script with a Redisson equivalent (its header's `redisson:` line is
-- not `none`), which of those header replies Redisson 4.7.0's corresponding script also gives
-- (the same value or shape, in some situation). Every other header reply is rlk's own, and the
-- "Replies that differ from Redisson's" section of COMPAT.md must name it as a code span
-- `<script>: <shape>` (the table's last column, "header replies"). The check fails when:
--   - an rlk-only reply is not named there;
--   - a named reply is not in that script's header (a stale or misspelt entry);
--   - a script with a Redisson equivalent is missing from REDISSON, or REDISSON names a script
--     or a reply the headers do not have (the table below goes stale with the scripts).
-- A reply both give in different situations (rlk's nil for a lock that no longer exists,
-- Redisson's 1) is the same reply here: such differences are prose rows of the same table, not
-- checked.
--
-- --control: runs the check on copies of COMPAT.md with one named reply removed, once per named
-- reply, and on a copy naming a reply no header has; passes (exit 0) only when every copy fails
-- with a problem that names what was changed.
--
-- Prints one line per problem and exits 1 when there is any; a summary and exit 0 otherwise.

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local sh = require("script_header")

-- Header replies (shapes as the headers write them) that Redisson 4.7.0's corresponding script
-- also gives. Empty: none of rlk's replies is Redisson's (a void call, or another shape).
local REDISSON = {
  ["fair/acquire"] = { "nil", "integer" },             -- nil acquired, else ms to wait
  ["fair/nonreentrant_acquire"] = { "nil", "integer" }, -- nil acquired, else ms to wait
  ["fair/cancel"] = {},                                -- acquireFailedAsync: EVAL_VOID
  ["fair/force_release"] = { "1", "0" },
  ["fair/release"] = { "nil", "0", "1" },
  ["fair/renew"] = { "1", "0" },
  ["fastmulti/acquire"] = { "nil", "integer" },       -- nil acquired, else max expire_time - now
  ["fastmulti/force_release"] = { "1", "0" },          -- the number removed, read as a boolean
  ["fastmulti/held"] = {},                             -- isLocked / isHeldByThread: 1 / 0
  ["fastmulti/release"] = { "nil", "0", "1" },
  ["fastmulti/renew"] = { "1", "0" },
  ["fenced/acquire"] = {},                             -- {-1, token} / {pttl, -1}: other arrays
  ["fenced/release"] = { "nil", "0", "1" },
  ["fenced/renew"] = { "1", "0" },
  ["fenced/token"] = { "integer" },                    -- GET: the token (null when missing)
  ["latch/count"] = { "integer" },
  ["latch/count_down"] = {},                           -- countDown is void
  ["latch/delete"] = { "1", "0" },
  ["latch/try_set_count"] = { "1", "0" },
  ["psemaphore/acquire"] = { "array", "nil" },         -- the ids; nil (or ":" .. expiry)
  ["psemaphore/acquired"] = { "integer" },             -- acquiredPermitsAsync: the zcount
  ["psemaphore/add_permits"] = {},                     -- addPermitsAsync: EVAL_VOID
  ["psemaphore/available"] = { "integer" },
  ["psemaphore/clear_expire"] = { "1", "0" },          -- clearExpireAsync: persist on both keys
  ["psemaphore/expire"] = { "1", "0" },                -- expireAsync: pexpire on both keys
  ["psemaphore/lease_time"] = { "integer", "0" },      -- getLeaseTimeAsync: -1, ms left, or 0
  ["psemaphore/release"] = { "integer" },
  ["psemaphore/set_permits"] = {},                     -- setPermitsAsync: EVAL_VOID
  ["psemaphore/try_set_permits"] = { "1", "0" },
  ["psemaphore/ttl"] = { "integer" },                  -- remainTimeToLiveAsync: PTTL
  ["psemaphore/update_lease"] = { "1", "0" },
  ["nonreentrant/acquire"] = { "nil", "integer" },     -- nil acquired, else the holder's PTTL
  ["nonreentrant/release"] = { "nil", "0", "1" },
  ["reentrant/acquire"] = { "nil", "integer" },        -- nil acquired, else the holder's PTTL
  ["reentrant/force_release"] = { "1", "0" },
  ["reentrant/release"] = { "nil", "0", "1" },
  ["reentrant/renew"] = { "1", "0" },
  ["reentrant/renew_many"] = { "array" },              -- LockTask: 1/0 per key
  ["rwlock/force_release"] = { "1", "0" },
  ["rwlock/read_acquire"] = { "nil", "integer" },
  ["rwlock/read_release"] = { "nil", "0", "1" },
  ["rwlock/renew_readers"] = { "array" },              -- ReadLockTask: 1/0 per key
  ["rwlock/renew_writer"] = { "1", "0" },
  ["rwlock/write_acquire"] = { "nil", "integer" },
  ["rwlock/write_release"] = { "nil", "0", "1" },
  ["semaphore/acquire"] = {},                          -- tryAcquire: 1 / 0 (booleans)
  ["semaphore/add_permits"] = {},                      -- addPermits is void
  ["semaphore/available"] = { "integer" },
  ["semaphore/clear_expire"] = { "1", "0" },           -- clearExpireAsync: persist
  ["semaphore/drain"] = {},                            -- the old count as a bulk string
  ["semaphore/expire"] = { "1", "0" },                 -- expireAsync: pexpire
  ["semaphore/release"] = {},                          -- EVAL_VOID
  ["semaphore/release_if_exists"] = { "1", "0" },      -- releaseIfExistsAsync: EVAL_BOOLEAN
  ["semaphore/try_acquire"] = { "1", "0" },
  ["semaphore/try_set_permits"] = { "1", "0" },
  ["semaphore/try_set_permits_ttl"] = { "1", "0" },
  ["semaphore/ttl"] = { "integer" },                   -- remainTimeToLiveAsync: PTTL
}

local control = false
if arg[1] == "--control" then
  control = true
  table.remove(arg, 1)
end
local scripts_dir, compat_path = arg[1], arg[2]
if not scripts_dir or not compat_path then
  io.stderr:write("usage: check-compat-replies.lua [--control] SCRIPTS_DIR COMPAT.md\n")
  os.exit(2)
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- Every script's header: name -> { redisson = text, shapes = { shape = true }, order = {...} }.
local function headers()
  local out = {}
  local p = assert(io.popen("cd '" .. scripts_dir .. "' && ls */*.lua"))
  for rel in p:lines() do
    if not rel:match("^lib/") then
      local h = sh.parse(read(scripts_dir .. "/" .. rel))
      if h and h.name then
        local e = { redisson = h.redisson or "", shapes = {}, order = {} }
        for _, r in ipairs(h.returns) do
          e.shapes[r.shape] = true
          e.order[#e.order + 1] = r.shape
        end
        out[h.name] = e
      end
    end
  end
  p:close()
  return out
end

-- The named replies of the "Replies that differ from Redisson's" section: { "script: shape" }.
local function named_replies(text)
  local section = text:match("\n## Replies that differ from Redisson's\n(.-)\n## ")
    or text:match("\n## Replies that differ from Redisson's\n(.*)$")
  local out, seen = {}, {}
  if not section then return nil end
  for span in section:gmatch("`([^`\n]+)`") do
    local script, shape = span:match("^([%w_]+/[%w_]+): (%S+)$")
    if script and not seen[span] then
      seen[span] = true
      out[#out + 1] = { script = script, shape = shape, text = span }
    end
  end
  return out
end

local function check(text, hs)
  local problems = {}
  local function add(fmt, ...) problems[#problems + 1] = string.format(fmt, ...) end
  local named = named_replies(text)
  if not named then
    add("%s: no section \"## Replies that differ from Redisson's\"", compat_path)
    return problems, 0, 0
  end
  local have = {}
  for _, n in ipairs(named) do
    have[n.text] = true
    local h = hs[n.script]
    if not h then
      add("%s names `%s`: there is no script %s", compat_path, n.text, n.script)
    elseif not h.shapes[n.shape] then
      add("%s names `%s`: %s's header has no reply %s", compat_path, n.text, n.script, n.shape)
    end
  end
  local names, required = {}, 0
  for name in pairs(hs) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local h = hs[name]
    if not h.redisson:match("^none") then
      local given = REDISSON[name]
      if not given then
        add("%s has a Redisson equivalent (%s) but no entry in REDISSON (tools/check-compat-replies.lua)",
          name, h.redisson)
      else
        local g = {}
        for _, shape in ipairs(given) do
          g[shape] = true
          if not h.shapes[shape] then
            add("REDISSON[%q] lists %s, which %s's header does not reply", name, shape, name)
          end
        end
        for _, shape in ipairs(h.order) do
          if not g[shape] then
            required = required + 1
            if not have[name .. ": " .. shape] then
              add("%s replies %s, which Redisson's corresponding script does not give, but %s's "
                .. "list of replies that differ does not name `%s: %s`", name, shape, compat_path,
                name, shape)
            end
          end
        end
      end
    end
  end
  for name in pairs(REDISSON) do
    if not hs[name] then add("REDISSON names %s: there is no such script", name) end
  end
  return problems, required, #named
end

local hs = headers()
local text = read(compat_path)

if not control then
  local problems, required, named = check(text, hs)
  for _, p in ipairs(problems) do print(p) end
  if #problems > 0 then os.exit(1) end
  print(string.format("check-compat-replies: %d rlk-only replies, all among the %d that %s names",
    required, named, compat_path))
  os.exit(0)
end

-- The control.
local named = named_replies(text) or {}
local caught, missed = 0, {}
local function plain(s) return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")) end
for _, n in ipairs(named) do
  local copy = text:gsub("`" .. plain(n.text) .. "`", "(removed)")
  local problems = check(copy, hs)
  local found = false
  for _, p in ipairs(problems) do
    if p:find("`" .. n.text .. "`", 1, true) then found = true end
  end
  if found then caught = caught + 1 else missed[#missed + 1] = n.text end
end
do
  local bogus = "reentrant/release: 7"
  local copy = text:gsub("\n## Replies that differ from Redisson's\n",
    "\n## Replies that differ from Redisson's\n\n`" .. bogus .. "`\n", 1)
  local problems = check(copy, hs)
  local found = false
  for _, p in ipairs(problems) do
    if p:find(bogus, 1, true) and p:find("no reply", 1, true) then found = true end
  end
  if found then caught = caught + 1 else missed[#missed + 1] = "(a made-up " .. bogus .. ")" end
end
if #named == 0 then missed[#missed + 1] = "(no named replies to remove)" end
for _, m in ipairs(missed) do print("control: the check passed a copy without " .. m) end
if #missed > 0 then os.exit(1) end
print(string.format("check-compat-replies control: %d of %d altered copies rejected", caught, #named + 1))
os.exit(0)
