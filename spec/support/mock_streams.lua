-- SPDX-License-Identifier: BSD-3-Clause
-- Stream commands of the mock: XADD (NOMKSTREAM; no trimming options), XLEN, XRANGE (- + and
-- explicit ids, COUNT). A stream is { entries = { {ms, seq, fields}, ... }, ms, seq } (the last
-- id ever added, 0-0 when none). Ids are exact up to 2^53 (Lua numbers); Redis's are 64-bit.

return function(api)
  local register, util = api.register, api.util
  local NIL = util.NIL
  local ONE = { 1, 1, 1 }

  local function invalid_id() return util.ERR("Invalid stream ID specified as stream command argument") end

  -- ms, seq (seq nil for 'ms-*') of an id argument, or nil. A missing seq is missing_seq.
  local function parse_id(s, missing_seq)
    local ms = s:match("^([0-9]+)$")
    if ms then return tonumber(ms), missing_seq end
    local a, b = s:match("^([0-9]+)%-([0-9]+)$")
    if a then return tonumber(a), tonumber(b) end
    a = s:match("^([0-9]+)%-%*$")
    if a then return tonumber(a), nil, true end
    return nil
  end

  local function id_string(ms, seq) return string.format("%.0f-%.0f", ms, seq) end

  register("xadd", -5, function(m, argv)
    local i, nomkstream = 3, false
    if argv[i]:lower() == "nomkstream" then nomkstream, i = true, i + 1 end
    local opt = argv[i]:lower()
    if opt == "maxlen" or opt == "minid" or opt == "limit" then
      return util.ERR("the mock does not model XADD " .. opt:upper())
    end
    local id = argv[i]
    local nfields = #argv - i
    if nfields < 2 or nfields % 2 ~= 0 then return util.arity("xadd") end
    local e, err = m:typed(argv[2], "stream")
    if err then return err end
    if not e and nomkstream then return NIL end
    local last_ms, last_seq = 0, 0
    if e then last_ms, last_seq = e.value.ms, e.value.seq end
    local ms, seq
    if id == "*" then
      ms = math.max(m:now(), last_ms)
      seq = (ms == last_ms) and last_seq + 1 or 0
    else
      local auto
      ms, seq, auto = parse_id(id, 0)
      if not ms then return invalid_id() end
      if auto then
        if ms < last_ms then
          return util.ERR("The ID specified in XADD is equal or smaller than the target stream top item")
        end
        seq = (ms == last_ms) and last_seq + 1 or 0
      else
        if ms == 0 and seq == 0 then return util.ERR("The ID specified in XADD must be greater than 0-0") end
        if ms < last_ms or (ms == last_ms and seq <= last_seq) then
          return util.ERR("The ID specified in XADD is equal or smaller than the target stream top item")
        end
      end
    end
    if not e then e = m:store(argv[2], "stream", { entries = {}, ms = 0, seq = 0 }) end
    local fields = {}
    for j = i + 1, #argv do fields[#fields + 1] = argv[j] end
    local s = e.value
    s.entries[#s.entries + 1] = { ms, seq, fields }
    s.ms, s.seq = ms, seq
    return id_string(ms, seq)
  end, ONE)

  register("xlen", 2, function(m, argv)
    local e, err = m:typed(argv[2], "stream")
    if err then return err end
    return e and #e.value.entries or 0
  end, ONE)

  -- The bound of an XRANGE argument as {ms, seq}, or nil.
  local function bound(s, is_start)
    if s == "-" then return { 0, 0 } end
    if s == "+" then return { math.huge, math.huge } end
    local ms, seq = parse_id(s, is_start and 0 or math.huge)
    if not ms or seq == nil then return nil end
    return { ms, seq }
  end

  local function le(a1, a2, b1, b2) return a1 < b1 or (a1 == b1 and a2 <= b2) end

  register("xrange", -4, function(m, argv)
    local from, to = bound(argv[3], true), bound(argv[4], false)
    if not from or not to then return invalid_id() end
    local count
    if #argv > 4 then
      if #argv ~= 6 or argv[5]:lower() ~= "count" then return util.syntax() end
      count = util.int_arg(argv[6])
      if not count then return util.not_integer() end
    end
    local e, err = m:typed(argv[2], "stream")
    if err then return err end
    local out = {}
    if not e or (count and count <= 0) then return out end
    for _, x in ipairs(e.value.entries) do
      if le(from[1], from[2], x[1], x[2]) and le(x[1], x[2], to[1], to[2]) then
        local f = {}
        for j, v in ipairs(x[3]) do f[j] = v end
        out[#out + 1] = { id_string(x[1], x[2]), f }
        if count and #out >= count then break end
      end
    end
    return out
  end, ONE)
end
