-- SPDX-License-Identifier: BSD-3-Clause
-- Hash commands of the mock. Fields keep insertion order, as a small
-- (listpack-encoded) hash does in Redis 7.0.

return function(api)
  local register, util, int64 = api.register, api.util, api.int64
  local NIL = util.NIL
  local ONE = { 1, 1, 1 }

  local function new_hash() return { fields = {}, order = {} } end

  local function put_field(h, f, v)
    local is_new = h.fields[f] == nil
    if is_new then h.order[#h.order + 1] = f end
    h.fields[f] = v
    return is_new
  end

  local function remove_field(h, f)
    if h.fields[f] == nil then return false end
    h.fields[f] = nil
    for i, name in ipairs(h.order) do
      if name == f then
        table.remove(h.order, i)
        break
      end
    end
    return true
  end

  -- The hash entry for writing (created when missing), or nil and an error.
  local function writable(m, key)
    local e, err = m:typed(key, "hash")
    if err then return nil, err end
    return e or m:store(key, "hash", new_hash())
  end

  local function field_value(m, key, field)
    local e, err = m:typed(key, "hash")
    if err then return nil, err end
    if not e then return NIL end
    local v = e.value.fields[field]
    if v == nil then return NIL end
    return v
  end

  local function hset(reply_ok)
    return function(m, argv)
      if #argv % 2 == 1 then return util.arity(argv[1]:lower()) end
      local e, err = writable(m, argv[2])
      if not e then return err end
      local added = 0
      for i = 3, #argv, 2 do
        if put_field(e.value, argv[i], argv[i + 1]) then added = added + 1 end
      end
      if reply_ok then return util.ok() end
      return added
    end
  end
  register("hset", -4, hset(false), ONE)
  register("hmset", -4, hset(true), ONE)

  register("hsetnx", 4, function(m, argv)
    local e, err = writable(m, argv[2])
    if not e then return err end
    if e.value.fields[argv[3]] ~= nil then return 0 end
    put_field(e.value, argv[3], argv[4])
    return 1
  end, ONE)

  register("hget", 3, function(m, argv)
    local v, err = field_value(m, argv[2], argv[3])
    return err or v
  end, ONE)

  register("hmget", -3, function(m, argv)
    local e, err = m:typed(argv[2], "hash")
    if err then return err end
    local out = {}
    for i = 3, #argv do
      local v = e and e.value.fields[argv[i]]
      out[i - 2] = (v == nil) and NIL or v
    end
    return out
  end, ONE)

  register("hdel", -3, function(m, argv)
    local e, err = m:typed(argv[2], "hash")
    if err then return err end
    if not e then return 0 end
    local n = 0
    for i = 3, #argv do
      if remove_field(e.value, argv[i]) then n = n + 1 end
    end
    if #e.value.order == 0 then m:delete(argv[2]) end
    return n
  end, ONE)

  register("hexists", 3, function(m, argv)
    local v, err = field_value(m, argv[2], argv[3])
    if err then return err end
    return (v == NIL) and 0 or 1
  end, ONE)

  register("hstrlen", 3, function(m, argv)
    local v, err = field_value(m, argv[2], argv[3])
    if err then return err end
    return (v == NIL) and 0 or #v
  end, ONE)

  register("hlen", 2, function(m, argv)
    local e, err = m:typed(argv[2], "hash")
    if err then return err end
    return e and #e.value.order or 0
  end, ONE)

  register("hincrby", 4, function(m, argv)
    local incr = int64.parse(argv[4])
    if not incr then return util.not_integer() end
    local e, err = writable(m, argv[2])
    if not e then return err end
    local cur = e.value.fields[argv[3]]
    if cur == nil then
      cur = "0"
    else
      cur = int64.parse(cur)
      if not cur then return util.ERR("hash value is not an integer") end
    end
    local res = int64.add(cur, incr)
    if not int64.in_range(res) then return util.overflow() end
    put_field(e.value, argv[3], res)
    return tonumber(res)
  end, ONE)

  local function listing(with_fields, with_values)
    return function(m, argv)
      local e, err = m:typed(argv[2], "hash")
      if err then return err end
      local out = {}
      if not e then return out end
      for _, f in ipairs(e.value.order) do
        if with_fields then out[#out + 1] = f end
        if with_values then out[#out + 1] = e.value.fields[f] end
      end
      return out
    end
  end
  register("hgetall", 2, listing(true, true), ONE)
  register("hkeys", 2, listing(true, false), ONE)
  register("hvals", 2, listing(false, true), ONE)
end
