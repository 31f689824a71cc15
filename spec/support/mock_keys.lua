-- SPDX-License-Identifier: BSD-3-Clause
-- Keyspace, expiry, server and pub/sub commands of the mock.

return function(api)
  local register, util, int64 = api.register, api.util, api.int64

  local ALL = { 1, -1, 1 }
  local ONE = { 1, 1, 1 }

  local function del(m, argv)
    local n = 0
    for i = 2, #argv do
      if m:delete(argv[i]) then n = n + 1 end
    end
    return n
  end
  register("del", -2, del, ALL)
  register("unlink", -2, del, ALL)

  register("exists", -2, function(m, argv)
    local n = 0
    for i = 2, #argv do
      if m:lookup(argv[i]) then n = n + 1 end
    end
    return n
  end, ALL)

  register("type", 2, function(m, argv)
    local e = m:lookup(argv[2])
    return util.status(e and e.type or "none")
  end, ONE)

  register("keys", 2, function(m, argv)
    local out = {}
    for _, k in ipairs(m:keys()) do
      if util.glob_match(argv[2], k) then out[#out + 1] = k end
    end
    return out
  end)

  register("dbsize", 1, function(m)
    return #m:keys()
  end)

  local function flush(m, argv)
    if #argv > 2 then return util.syntax() end
    if argv[2] then
      local mode = argv[2]:lower()
      if mode ~= "async" and mode ~= "sync" then return util.syntax() end
    end
    m:flush()
    return util.ok()
  end
  register("flushdb", -1, flush)
  register("flushall", -1, flush)

  register("rename", 3, function(m, argv)
    local src, dst = argv[2], argv[3]
    local e = m:lookup(src)
    if not e then return util.no_such_key() end
    if src == dst then return util.ok() end
    m.data[dst] = { type = e.type, value = e.value, expire = e.expire }
    m.data[src] = nil
    return util.ok()
  end, { 1, 2, 1 })

  register("persist", 2, function(m, argv)
    local e = m:lookup(argv[2])
    if e and e.expire then
      e.expire = nil
      return 1
    end
    return 0
  end, ONE)

  -- EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT ------------------------------

  local function expire_options(argv)
    local f = {}
    for j = 4, #argv do
      local o = argv[j]:lower()
      if o == "nx" or o == "xx" or o == "gt" or o == "lt" then
        f[o] = true
      else
        return nil, util.ERR("Unsupported option " .. argv[j])
      end
    end
    if f.nx and (f.xx or f.gt or f.lt) then
      return nil, util.ERR("NX and XX, GT or LT options at the same time are not compatible")
    end
    if f.gt and f.lt then
      return nil, util.ERR("GT and LT options at the same time are not compatible")
    end
    return f
  end

  -- The absolute expire time in ms as an exact integer string, or nil and
  -- the error reply.
  local function expire_when(m, argv, unit_seconds, relative)
    local when = int64.parse(argv[3])
    if not when then return nil, util.not_integer() end
    local name = argv[1]:lower()
    if unit_seconds then
      if int64.cmp(when, "9223372036854775") > 0 or int64.cmp(when, "-9223372036854775") < 0 then
        return nil, util.bad_expire(name)
      end
      when = int64.mul_small(when, 1000)
    end
    local base = relative and int64.from_number(m:now()) or "0"
    if int64.cmp(when, int64.sub(int64.MAX, base)) > 0 then
      return nil, util.bad_expire(name)
    end
    return int64.add(when, base)
  end

  local function refused_by_flags(f, when, current)
    if f.nx and current ~= nil then return true end
    if f.xx and current == nil then return true end
    if f.gt and (current == nil or when <= current) then return true end
    if f.lt and current ~= nil and when >= current then return true end
    return false
  end

  local function expire_command(unit_seconds, relative)
    return function(m, argv)
      local f, ferr = expire_options(argv)
      if not f then return ferr end
      local when, werr = expire_when(m, argv, unit_seconds, relative)
      if not when then return werr end
      local e = m:lookup(argv[2])
      if not e then return 0 end
      local at = tonumber(when)
      if refused_by_flags(f, at, e.expire) then return 0 end
      m:expire_at(argv[2], at)
      return 1
    end
  end
  register("expire", -3, expire_command(true, true), ONE)
  register("pexpire", -3, expire_command(false, true), ONE)
  register("expireat", -3, expire_command(true, false), ONE)
  register("pexpireat", -3, expire_command(false, false), ONE)

  -- TTL / PTTL / EXPIRETIME / PEXPIRETIME --------------------------------

  local function ttl_command(ms, absolute)
    return function(m, argv)
      local e = m:lookup(argv[2])
      if not e then return -2 end
      if not e.expire then return -1 end
      local t = absolute and e.expire or (e.expire - m:now())
      if t < 0 then t = 0 end
      if ms then return t end
      return math.floor((t + 500) / 1000)
    end
  end
  register("ttl", 2, ttl_command(false, false), ONE)
  register("pttl", 2, ttl_command(true, false), ONE)
  register("expiretime", 2, ttl_command(false, true), ONE)
  register("pexpiretime", 2, ttl_command(true, true), ONE)

  -- Server -----------------------------------------------------------------

  register("ping", -1, function(_, argv)
    if #argv > 2 then return util.arity("ping") end
    if argv[2] then return argv[2] end
    return util.status("PONG")
  end)

  register("echo", 2, function(_, argv) return argv[2] end)

  register("time", 1, function(m)
    local now = m:now()
    local sec = math.floor(now / 1000)
    local usec = math.floor((now - sec * 1000) * 1000)
    return { int64.from_number(sec), int64.from_number(usec) }
  end)

  register("publish", 3, function(m, argv)
    return m:publish(argv[2], argv[3])
  end)

  register("spublish", 3, function(m, argv)
    return m:spublish(argv[2], argv[3])
  end)
end
