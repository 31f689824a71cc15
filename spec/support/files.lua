-- SPDX-License-Identifier: BSD-3-Clause
-- Files and commands for the specs of the command-line tools (tools/*.lua).
--
--   local files = require("support.files")
--   local dir = files.tmpdir()                 -- a fresh directory (mktemp -d); remove it with files.rm
--   files.write(path, text)                    -- creates the parent directories
--   files.read(path)                           -- the bytes, or nil when there is no such file
--   local lines, rc = files.run(cmd)           -- stdout and stderr as lines, and the exit status

local files = {}

function files.tmpdir()
  local p = io.popen("mktemp -d")
  local d = p:read("*l")
  p:close()
  return d
end

function files.rm(dir)
  os.execute("rm -rf '" .. dir .. "'")
end

function files.write(path, text)
  os.execute("mkdir -p '" .. path:match("^(.*)/") .. "'")
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

function files.read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

function files.run(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"rc=$?\"")
  local lines = {}
  for l in p:read("*a"):gmatch("[^\n]+") do lines[#lines + 1] = l end
  p:close()
  local rc = tonumber(table.remove(lines):match("^rc=(%d+)$"))
  return lines, rc
end

return files
