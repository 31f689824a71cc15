-- SPDX-License-Identifier: BSD-3-Clause
-- List commands of the mock. A list is a Lua array, head first.

return function(api)
  local register, util = api.register, api.util
  local NIL = util.NIL
  local ONE = { 1, 1, 1 }

  local function push(at_head, only_existing)
    return function(m, argv)
      local e, err = m:typed(argv[2], "list")
      if err then return err end
      if not e then
        if only_existing then return 0 end
        e = m:store(argv[2], "list", {})
      end
      local l = e.value
      for i = 3, #argv do
        if at_head then
          table.insert(l, 1, argv[i])
        else
          l[#l + 1] = argv[i]
        end
      end
      return #l
    end
  end
  register("lpush", -3, push(true, false), ONE)
  register("rpush", -3, push(false, false), ONE)
  register("lpushx", -3, push(true, true), ONE)
  register("rpushx", -3, push(false, true), ONE)

  local function drop_if_empty(m, key, e)
    if #e.value == 0 then m:delete(key) end
  end

  local function pop(at_head)
    return function(m, argv)
      if #argv > 3 then return util.arity(argv[1]:lower()) end
      local count
      if argv[3] then
        count = util.int_arg(argv[3])
        if count == nil or count < 0 then
          return util.ERR("value is out of range, must be positive")
        end
      end
      local e, err = m:typed(argv[2], "list")
      if err then return err end
      if not e then return NIL end
      local l = e.value
      if count == nil then
        local v = table.remove(l, at_head and 1 or #l)
        drop_if_empty(m, argv[2], e)
        return v
      end
      local out = {}
      while #out < count and #l > 0 do
        out[#out + 1] = table.remove(l, at_head and 1 or #l)
      end
      drop_if_empty(m, argv[2], e)
      return out
    end
  end
  register("lpop", -2, pop(true), ONE)
  register("rpop", -2, pop(false), ONE)

  register("llen", 2, function(m, argv)
    local e, err = m:typed(argv[2], "list")
    if err then return err end
    return e and #e.value or 0
  end, ONE)

  -- 1-based position of a Redis index (negative: from the tail), or nil.
  local function position(l, index)
    if index < 0 then index = #l + index end
    if index < 0 or index >= #l then return nil end
    return index + 1
  end

  register("lindex", 3, function(m, argv)
    local e, err = m:typed(argv[2], "list")
    if err then return err end
    if not e then return NIL end
    local index = util.int_arg(argv[3])
    if index == nil then return util.not_integer() end
    local p = position(e.value, index)
    return p and e.value[p] or NIL
  end, ONE)

  register("lset", 4, function(m, argv)
    local e, err = m:typed(argv[2], "list")
    if err then return err end
    if not e then return util.no_such_key() end
    local index = util.int_arg(argv[3])
    if index == nil then return util.not_integer() end
    local p = position(e.value, index)
    if not p then return util.out_of_range() end
    e.value[p] = argv[4]
    return util.ok()
  end, ONE)

  -- Clamps a Redis [start, stop] range to 1-based positions; nil when empty.
  local function clamp(len, start, stop)
    if start < 0 then start = len + start end
    if stop < 0 then stop = len + stop end
    if start < 0 then start = 0 end
    if start > stop or start >= len then return nil end
    if stop >= len then stop = len - 1 end
    return start + 1, stop + 1
  end

  register("lrange", 4, function(m, argv)
    local start, stop = util.int_arg(argv[3]), util.int_arg(argv[4])
    if start == nil or stop == nil then return util.not_integer() end
    local e, err = m:typed(argv[2], "list")
    if err then return err end
    local out = {}
    if not e then return out end
    local from, to = clamp(#e.value, start, stop)
    if from then
      for i = from, to do out[#out + 1] = e.value[i] end
    end
    return out
  end, ONE)

  register("ltrim", 4, function(m, argv)
    local start, stop = util.int_arg(argv[3]), util.int_arg(argv[4])
    if start == nil or stop == nil then return util.not_integer() end
    local e, err = m:typed(argv[2], "list")
    if err then return err end
    if not e then return util.ok() end
    local from, to = clamp(#e.value, start, stop)
    local kept = {}
    if from then
      for i = from, to do kept[#kept + 1] = e.value[i] end
    end
    e.value = kept
    drop_if_empty(m, argv[2], e)
    return util.ok()
  end, ONE)

  register("lrem", 4, function(m, argv)
    local count = util.int_arg(argv[3])
    if count == nil then return util.not_integer() end
    local e, err = m:typed(argv[2], "list")
    if err then return err end
    if not e then return 0 end
    local l, removed = e.value, 0
    local limit = (count == 0) and math.huge or math.abs(count)
    if count >= 0 then
      local i = 1
      while i <= #l and removed < limit do
        if l[i] == argv[4] then
          table.remove(l, i)
          removed = removed + 1
        else
          i = i + 1
        end
      end
    else
      local i = #l
      while i >= 1 and removed < limit do
        if l[i] == argv[4] then
          table.remove(l, i)
          removed = removed + 1
        end
        i = i - 1
      end
    end
    drop_if_empty(m, argv[2], e)
    return removed
  end, ONE)

  -- LPOS key element: the 0-based index of the first match, or nil. The RANK, COUNT and MAXLEN
  -- options are not modelled (no script uses them): a call with options is refused.
  register("lpos", -3, function(m, argv)
    if #argv > 3 then return util.ERR("the mock's LPOS takes no options") end
    local e, err = m:typed(argv[2], "list")
    if err then return err end
    if not e then return NIL end
    for i = 1, #e.value do
      if e.value[i] == argv[3] then return i - 1 end
    end
    return NIL
  end, ONE)

  register("linsert", 5, function(m, argv)
    local where = argv[3]:lower()
    if where ~= "before" and where ~= "after" then return util.syntax() end
    local e, err = m:typed(argv[2], "list")
    if err then return err end
    if not e then return 0 end
    local l = e.value
    for i = 1, #l do
      if l[i] == argv[4] then
        table.insert(l, (where == "before") and i or i + 1, argv[5])
        return #l
      end
    end
    return -1
  end, ONE)
end
