-- SPDX-License-Identifier: BSD-3-Clause
-- The conformance cases (see spec/conformance_spec.lua for the format),
-- gathered from one file per area.

local AREAS = { "strings", "keys", "hashes", "lists", "sets", "zsets", "streams", "wrongtype", "scripting",
                "functions" }

local cases = {}
for _, area in ipairs(AREAS) do
  local ok, list = pcall(require, "conformance." .. area)
  if not ok then error("conformance/" .. area .. ".lua: " .. tostring(list), 0) end
  for _, case in ipairs(list) do
    case.area = area
    case.name = area .. ": " .. case.name
    cases[#cases + 1] = case
  end
end

return cases
