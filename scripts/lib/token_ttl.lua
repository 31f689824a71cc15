-- Fenced lock: TTL for a token key whose last token is token: it outlives a lock leased now for
-- lease_ms, and lives until the server clock has passed token, plus GRACE_MS (the script defines it)
-- either way.
-- luacheck: read globals GRACE_MS
--- @include "lib/int"

local function token_ttl(token, now, lease_ms)
  local ahead_ms = math.ceil(math.max(0, token - now) / 1000)
  return int(tonumber(lease_ms) + ahead_ms + GRACE_MS)
end
