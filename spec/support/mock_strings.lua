-- SPDX-License-Identifier: BSD-3-Clause
-- String commands of the mock.

return function(api)
  local register, util, int64 = api.register, api.util, api.int64
  local NIL = util.NIL

  local ONE = { 1, 1, 1 }
  local ALL = { 1, -1, 1 }

  -- SET / GETEX options (parseExtendedStringArgumentsOrReply) ------------

  local EXPIRE_OPTS = { ex = true, px = true, exat = true, pxat = true }

  local function has_any(f, names)
    for _, n in ipairs(names) do
      if f[n] then return true end
    end
    return false
  end

  local function parse_expire_opt(f, o, nxt)
    local others = { keepttl = true, persist = true }
    for name in pairs(EXPIRE_OPTS) do
      if name ~= o then others[name] = true end
    end
    for name in pairs(others) do
      if f[name] then return false end
    end
    if not nxt then return false end
    f[o] = true
    f.expire = nxt
    f.unit_seconds = (o == "ex" or o == "exat")
    f.relative = (o == "ex" or o == "px")
    return true
  end

  -- kind: "set" (NX XX GET KEEPTTL EX PX EXAT PXAT) or "getex" (EX PX
  -- EXAT PXAT PERSIST). Returns the flags, or nil and a syntax error.
  local function parse_options(argv, from, kind)
    local f = {}
    local j = from
    while j <= #argv do
      local o = argv[j]:lower()
      local nxt = argv[j + 1]
      local ok = false
      if kind == "set" and o == "nx" and not f.xx then
        f.nx, ok = true, true
      elseif kind == "set" and o == "xx" and not f.nx then
        f.xx, ok = true, true
      elseif kind == "set" and o == "get" then
        f.get, ok = true, true
      elseif kind == "set" and o == "keepttl"
          and not has_any(f, { "persist", "ex", "exat", "px", "pxat" }) then
        f.keepttl, ok = true, true
      elseif kind == "getex" and o == "persist"
          and not has_any(f, { "keepttl", "ex", "exat", "px", "pxat" }) then
        f.persist, ok = true, true
      elseif EXPIRE_OPTS[o] then
        ok = parse_expire_opt(f, o, nxt)
        if ok then j = j + 1 end
      end
      if not ok then return nil, util.syntax() end
      j = j + 1
    end
    return f
  end

  -- The absolute expire time (ms) of the options, or nil and an error.
  local function expire_of(m, f, cmd)
    local ms = int64.parse(f.expire)
    if not ms then return nil, util.not_integer() end
    if int64.cmp(ms, "0") <= 0
        or (f.unit_seconds and int64.cmp(ms, "9223372036854775") > 0) then
      return nil, util.bad_expire(cmd)
    end
    if f.unit_seconds then ms = int64.mul_small(ms, 1000) end
    if f.relative then
      ms = int64.add(ms, int64.from_number(m:now()))
      if int64.cmp(ms, int64.MAX) > 0 then return nil, util.bad_expire(cmd) end
    end
    return tonumber(ms)
  end

  local function string_value(m, key)
    local e, err = m:typed(key, "string")
    if err then return nil, err end
    if not e then return NIL end
    return e.value
  end

  -- Stores a string; keep_ttl keeps the key's current expire time.
  local function put(m, key, value, keep_ttl, expire)
    local cur = m:lookup(key)
    local e = m:store(key, "string", value)
    if keep_ttl and cur then e.expire = cur.expire end
    if expire then e.expire = expire end
    return e
  end

  register("set", -3, function(m, argv)
    local f, err = parse_options(argv, 4, "set")
    if not f then return err end
    local expire
    if f.expire then
      expire, err = expire_of(m, f, "set")
      if not expire then return err end
    end
    local old = NIL
    if f.get then
      old, err = string_value(m, argv[2])
      if err then return err end
    end
    local exists = m:lookup(argv[2]) ~= nil
    if (f.nx and exists) or (f.xx and not exists) then
      return old
    end
    put(m, argv[2], argv[3], f.keepttl, expire)
    if f.get then return old end
    return util.ok()
  end, ONE)

  local function set_with_expire(option, cmd)
    return function(m, argv)
      local f = { expire = argv[3] }
      parse_expire_opt(f, option, argv[3])
      local expire, err = expire_of(m, f, cmd)
      if not expire then return err end
      put(m, argv[2], argv[4], false, expire)
      return util.ok()
    end
  end
  register("setex", 4, set_with_expire("ex", "setex"), ONE)
  register("psetex", 4, set_with_expire("px", "psetex"), ONE)

  register("setnx", 3, function(m, argv)
    if m:lookup(argv[2]) then return 0 end
    put(m, argv[2], argv[3])
    return 1
  end, ONE)

  register("get", 2, function(m, argv)
    local v, err = string_value(m, argv[2])
    return err or v
  end, ONE)

  register("getset", 3, function(m, argv)
    local old, err = string_value(m, argv[2])
    if err then return err end
    put(m, argv[2], argv[3])
    return old
  end, ONE)

  register("getdel", 2, function(m, argv)
    local v, err = string_value(m, argv[2])
    if err then return err end
    if v ~= NIL then m:delete(argv[2]) end
    return v
  end, ONE)

  register("getex", -2, function(m, argv)
    local f, err = parse_options(argv, 3, "getex")
    if not f then return err end
    local v
    v, err = string_value(m, argv[2])
    if err then return err end
    if v == NIL then return NIL end
    if f.expire then
      local expire
      expire, err = expire_of(m, f, "getex")
      if not expire then return err end
      m:expire_at(argv[2], expire)
    elseif f.persist then
      m:lookup(argv[2]).expire = nil
    end
    return v
  end, ONE)

  register("mget", -2, function(m, argv)
    local out = {}
    for i = 2, #argv do
      local e = m:lookup(argv[i])
      out[i - 1] = (e and e.type == "string") and e.value or NIL
    end
    return out
  end, ALL)

  register("mset", -3, function(m, argv)
    if (#argv - 1) % 2 ~= 0 then return util.arity("mset") end
    for i = 2, #argv, 2 do put(m, argv[i], argv[i + 1]) end
    return util.ok()
  end, { 1, -1, 2 })

  register("msetnx", -3, function(m, argv)
    if (#argv - 1) % 2 ~= 0 then return util.arity("msetnx") end
    for i = 2, #argv, 2 do
      if m:lookup(argv[i]) then return 0 end
    end
    for i = 2, #argv, 2 do put(m, argv[i], argv[i + 1]) end
    return 1
  end, { 1, -1, 2 })

  register("strlen", 2, function(m, argv)
    local v, err = string_value(m, argv[2])
    if err then return err end
    if v == NIL then return 0 end
    return #v
  end, ONE)

  register("append", 3, function(m, argv)
    local e, err = m:typed(argv[2], "string")
    if err then return err end
    if e then
      e.value = e.value .. argv[3]
      return #e.value
    end
    put(m, argv[2], argv[3])
    return #argv[3]
  end, ONE)

  -- INCR / DECR family ---------------------------------------------------

  local function incr_by(m, key, incr)
    local e, err = m:typed(key, "string")
    if err then return err end
    local cur = "0"
    if e then
      cur = int64.parse(e.value)
      if not cur then return util.not_integer() end
    end
    local res = int64.add(cur, incr)
    if not int64.in_range(res) then return util.overflow() end
    if e then
      e.value = res
    else
      put(m, key, res)
    end
    return tonumber(res)
  end

  register("incr", 2, function(m, argv) return incr_by(m, argv[2], "1") end, ONE)
  register("decr", 2, function(m, argv) return incr_by(m, argv[2], "-1") end, ONE)

  register("incrby", 3, function(m, argv)
    local incr = int64.parse(argv[3])
    if not incr then return util.not_integer() end
    return incr_by(m, argv[2], incr)
  end, ONE)

  register("decrby", 3, function(m, argv)
    local incr = int64.parse(argv[3])
    if not incr then return util.not_integer() end
    if incr == int64.MIN then return util.ERR("decrement would overflow") end
    return incr_by(m, argv[2], int64.neg(incr))
  end, ONE)
end
