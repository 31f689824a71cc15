-- SPDX-License-Identifier: BSD-3-Clause
-- Set commands of the mock. SMEMBERS lists an all-integer set (an intset
-- in Redis 7.0, up to 512 members) in ascending numeric order, as Redis
-- does; any other set in insertion order (Redis: hash order, unspecified).

return function(api)
  local register, int64 = api.register, api.int64
  local ONE = { 1, 1, 1 }
  local INTSET_MAX = 512

  local function new_set() return { members = {}, order = {}, intset = true } end

  local function add_member(s, v)
    if s.members[v] then return false end
    s.members[v] = true
    s.order[#s.order + 1] = v
    if s.intset and (not int64.parse(v) or #s.order > INTSET_MAX) then
      s.intset = false
    end
    return true
  end

  local function remove_member(s, v)
    if not s.members[v] then return false end
    s.members[v] = nil
    for i, name in ipairs(s.order) do
      if name == v then
        table.remove(s.order, i)
        break
      end
    end
    return true
  end

  register("sadd", -3, function(m, argv)
    local e, err = m:typed(argv[2], "set")
    if err then return err end
    e = e or m:store(argv[2], "set", new_set())
    local n = 0
    for i = 3, #argv do
      if add_member(e.value, argv[i]) then n = n + 1 end
    end
    return n
  end, ONE)

  register("srem", -3, function(m, argv)
    local e, err = m:typed(argv[2], "set")
    if err then return err end
    if not e then return 0 end
    local n = 0
    for i = 3, #argv do
      if remove_member(e.value, argv[i]) then n = n + 1 end
    end
    if #e.value.order == 0 then m:delete(argv[2]) end
    return n
  end, ONE)

  register("sismember", 3, function(m, argv)
    local e, err = m:typed(argv[2], "set")
    if err then return err end
    return (e and e.value.members[argv[3]]) and 1 or 0
  end, ONE)

  register("smismember", -3, function(m, argv)
    local e, err = m:typed(argv[2], "set")
    if err then return err end
    local out = {}
    for i = 3, #argv do
      out[i - 2] = (e and e.value.members[argv[i]]) and 1 or 0
    end
    return out
  end, ONE)

  register("scard", 2, function(m, argv)
    local e, err = m:typed(argv[2], "set")
    if err then return err end
    return e and #e.value.order or 0
  end, ONE)

  register("smembers", 2, function(m, argv)
    local e, err = m:typed(argv[2], "set")
    if err then return err end
    local out = {}
    if not e then return out end
    for i, v in ipairs(e.value.order) do out[i] = v end
    if e.value.intset then
      table.sort(out, function(a, b) return int64.cmp(a, b) < 0 end)
    end
    return out
  end, ONE)
end
