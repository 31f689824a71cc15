-- SPDX-License-Identifier: BSD-3-Clause
-- Sorted set commands of the mock. Members are ordered by score, then by
-- member bytes. Scores are doubles; replies format them as Redis 7.0 does
-- (RESP2: "inf", "-inf", else %.17g; -0 is stored as 0).

return function(api)
  local register, util = api.register, api.util
  local NIL = util.NIL
  local ONE = { 1, 1, 1 }

  local function new_zset() return { scores = {}, count = 0, sorted = nil } end

  local function ordered(z)
    if not z.sorted then
      local list = {}
      for member in pairs(z.scores) do list[#list + 1] = member end
      table.sort(list, function(a, b)
        local sa, sb = z.scores[a], z.scores[b]
        if sa ~= sb then return sa < sb end
        return a < b
      end)
      z.sorted = list
    end
    return z.sorted
  end

  local function set_score(z, member, score)
    if z.scores[member] == nil then z.count = z.count + 1 end
    z.scores[member] = score + 0 -- -0 becomes 0
    z.sorted = nil
  end

  local function remove(z, member)
    if z.scores[member] == nil then return false end
    z.scores[member] = nil
    z.count = z.count - 1
    z.sorted = nil
    return true
  end

  local function drop_if_empty(m, key, e)
    if e.value.count == 0 then m:delete(key) end
  end

  -- ZADD -----------------------------------------------------------------

  local ZADD_FLAGS = { nx = true, xx = true, ch = true, incr = true, gt = true, lt = true }

  local function zadd_options(argv)
    local f, idx = {}, 3
    while idx <= #argv and ZADD_FLAGS[argv[idx]:lower()] do
      f[argv[idx]:lower()] = true
      idx = idx + 1
    end
    local elements = #argv - idx + 1
    if elements == 0 or elements % 2 == 1 then return nil, util.syntax() end
    if f.nx and f.xx then
      return nil, util.ERR("XX and NX options at the same time are not compatible")
    end
    if (f.gt and f.nx) or (f.lt and f.nx) or (f.gt and f.lt) then
      return nil, util.ERR("GT, LT, and/or NX options at the same time are not compatible")
    end
    if f.incr and elements > 2 then
      return nil, util.ERR("INCR option supports a single increment-element pair")
    end
    return f, idx
  end

  -- One zsetAdd: returns "added" | "updated" | "nop" | "nan", new score.
  local function zset_add(z, f, score, member)
    local cur = z.scores[member]
    if cur == nil then
      if f.xx then return "nop" end
      set_score(z, member, score)
      return "added", score
    end
    if f.nx then return "nop" end
    if f.incr then
      score = score + cur
      if score ~= score then return "nan" end
    end
    if (f.lt and score >= cur) or (f.gt and score <= cur) then return "nop" end
    if score ~= cur then
      set_score(z, member, score)
      return "updated", score
    end
    return "same", score
  end

  local function zadd(m, argv, f, idx)
    local scores = {}
    for j = idx, #argv, 2 do
      local s = util.parse_double(argv[j])
      if s == nil then return util.not_float() end
      scores[#scores + 1] = s
    end
    local e, err = m:typed(argv[2], "zset")
    if err then return err end
    if not e then
      if f.xx then return f.incr and NIL or 0 end
      e = m:store(argv[2], "zset", new_zset())
    end
    local added, updated, processed, score = 0, 0, 0, nil
    for i, s in ipairs(scores) do
      local outcome, newscore = zset_add(e.value, f, s, argv[idx + 2 * i - 1])
      if outcome == "nan" then
        drop_if_empty(m, argv[2], e)
        return util.ERR("resulting score is not a number (NaN)")
      end
      if outcome == "added" then added = added + 1 end
      if outcome == "updated" then updated = updated + 1 end
      if outcome ~= "nop" then processed = processed + 1 end
      score = newscore
    end
    drop_if_empty(m, argv[2], e)
    if f.incr then
      if processed > 0 then return util.format_double(score) end
      return NIL
    end
    return f.ch and (added + updated) or added
  end

  register("zadd", -4, function(m, argv)
    local f, idx = zadd_options(argv)
    if not f then return idx end
    return zadd(m, argv, f, idx)
  end, ONE)

  register("zincrby", 4, function(m, argv)
    return zadd(m, { argv[1], argv[2], argv[3], argv[4] }, { incr = true }, 3)
  end, ONE)

  register("zrem", -3, function(m, argv)
    local e, err = m:typed(argv[2], "zset")
    if err then return err end
    if not e then return 0 end
    local n = 0
    for i = 3, #argv do
      if remove(e.value, argv[i]) then n = n + 1 end
    end
    drop_if_empty(m, argv[2], e)
    return n
  end, ONE)

  register("zscore", 3, function(m, argv)
    local e, err = m:typed(argv[2], "zset")
    if err then return err end
    local s = e and e.value.scores[argv[3]]
    if s == nil then return NIL end
    return util.format_double(s)
  end, ONE)

  register("zmscore", -3, function(m, argv)
    local e, err = m:typed(argv[2], "zset")
    if err then return err end
    local out = {}
    for i = 3, #argv do
      local s = e and e.value.scores[argv[i]]
      out[i - 2] = (s == nil) and NIL or util.format_double(s)
    end
    return out
  end, ONE)

  register("zcard", 2, function(m, argv)
    local e, err = m:typed(argv[2], "zset")
    if err then return err end
    return e and e.value.count or 0
  end, ONE)

  local function rank(reverse)
    return function(m, argv)
      local e, err = m:typed(argv[2], "zset")
      if err then return err end
      if not e or e.value.scores[argv[3]] == nil then return NIL end
      local list = ordered(e.value)
      for i, member in ipairs(list) do
        if member == argv[3] then
          return reverse and (#list - i) or (i - 1)
        end
      end
      return NIL
    end
  end
  register("zrank", 3, rank(false), ONE)
  register("zrevrank", 3, rank(true), ONE)

  -- Ranges -----------------------------------------------------------------

  local function range_bounds(min_s, max_s)
    local min, minex = util.parse_range_bound(min_s)
    local max, maxex = util.parse_range_bound(max_s)
    if min == nil or max == nil then return nil end
    return { min = min, minex = minex, max = max, maxex = maxex }
  end

  local function in_range(r, s)
    local above = r.minex and (s > r.min) or (not r.minex and s >= r.min)
    local below = r.maxex and (s < r.max) or (not r.maxex and s <= r.max)
    return above and below
  end

  local function members_in(z, r)
    local out = {}
    for _, member in ipairs(ordered(z)) do
      if in_range(r, z.scores[member]) then out[#out + 1] = member end
    end
    return out
  end

  local function reversed(list)
    local out = {}
    for i = #list, 1, -1 do out[#out + 1] = list[i] end
    return out
  end

  local function emit(z, members, withscores)
    local out = {}
    for _, member in ipairs(members) do
      out[#out + 1] = member
      if withscores then out[#out + 1] = util.format_double(z.scores[member]) end
    end
    return out
  end

  local function limit_list(list, offset, limit)
    if offset < 0 then return {} end
    local out = {}
    for i = offset + 1, #list do
      if limit >= 0 and #out >= limit then break end
      out[#out + 1] = list[i]
    end
    return out
  end

  local function rank_slice(list, start, stop)
    local len = #list
    if start < 0 then start = len + start end
    if stop < 0 then stop = len + stop end
    if start < 0 then start = 0 end
    local out = {}
    if start > stop or start >= len then return out end
    if stop >= len then stop = len - 1 end
    for i = start + 1, stop + 1 do out[#out + 1] = list[i] end
    return out
  end

  -- zrangeGenericCommand: o = { kind = "rank"|"score" (preset or nil),
  -- reverse = bool (preset or nil), options = bool (ZRANGE's BYSCORE/REV) }
  local function zrange(preset)
    return function(m, argv)
      local kind, reverse = preset.kind, preset.reverse
      local withscores, offset, limit = false, 0, -1
      local j = 5
      while j <= #argv do
        local o = argv[j]:lower()
        local left = #argv - j
        if o == "withscores" then
          withscores = true
        elseif o == "limit" and left >= 2 then
          offset, limit = util.int_arg(argv[j + 1]), util.int_arg(argv[j + 2])
          if offset == nil or limit == nil then return util.not_integer() end
          j = j + 2
        elseif o == "rev" and reverse == nil then
          reverse = true
        elseif o == "byscore" and kind == nil then
          kind = "score"
        elseif o == "bylex" and kind == nil then
          return util.ERR("rlk-mock: ZRANGE BYLEX is not implemented")
        else
          return util.syntax()
        end
        j = j + 1
      end
      kind = kind or "rank"
      if limit ~= -1 and kind == "rank" then
        return util.ERR("syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
      end
      local lo, hi = argv[3], argv[4]
      if reverse and kind == "score" then lo, hi = hi, lo end
      local start, stop, r
      if kind == "rank" then
        start, stop = util.int_arg(lo), util.int_arg(hi)
        if start == nil or stop == nil then return util.not_integer() end
      else
        r = range_bounds(lo, hi)
        if not r then return util.ERR("min or max is not a float") end
      end
      local e, err = m:typed(argv[2], "zset")
      if err then return err end
      if not e then return {} end
      local z = e.value
      local list = ordered(z)
      if reverse then list = reversed(list) end
      if kind == "rank" then
        return emit(z, rank_slice(list, start, stop), withscores)
      end
      local matched = {}
      for _, member in ipairs(list) do
        if in_range(r, z.scores[member]) then matched[#matched + 1] = member end
      end
      return emit(z, limit_list(matched, offset, limit), withscores)
    end
  end
  register("zrange", -4, zrange({}), ONE)
  register("zrevrange", -4, zrange({ kind = "rank", reverse = true }), ONE)
  register("zrangebyscore", -4, zrange({ kind = "score", reverse = false }), ONE)
  register("zrevrangebyscore", -4, zrange({ kind = "score", reverse = true }), ONE)

  register("zcount", 4, function(m, argv)
    local r = range_bounds(argv[3], argv[4])
    if not r then return util.ERR("min or max is not a float") end
    local e, err = m:typed(argv[2], "zset")
    if err then return err end
    if not e then return 0 end
    return #members_in(e.value, r)
  end, ONE)

  register("zremrangebyscore", 4, function(m, argv)
    local r = range_bounds(argv[3], argv[4])
    if not r then return util.ERR("min or max is not a float") end
    local e, err = m:typed(argv[2], "zset")
    if err then return err end
    if not e then return 0 end
    local victims = members_in(e.value, r)
    for _, member in ipairs(victims) do remove(e.value, member) end
    drop_if_empty(m, argv[2], e)
    return #victims
  end, ONE)

  register("zremrangebyrank", 4, function(m, argv)
    local start, stop = util.int_arg(argv[3]), util.int_arg(argv[4])
    if start == nil or stop == nil then return util.not_integer() end
    local e, err = m:typed(argv[2], "zset")
    if err then return err end
    if not e then return 0 end
    local victims = rank_slice(ordered(e.value), start, stop)
    for _, member in ipairs(victims) do remove(e.value, member) end
    drop_if_empty(m, argv[2], e)
    return #victims
  end, ONE)
end
