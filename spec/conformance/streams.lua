-- SPDX-License-Identifier: BSD-3-Clause
-- Conformance cases: stream commands (XADD, XLEN, XRANGE; what scripts/fence/xadd uses). An id the
-- server picks from its clock (*) is compared only after an entry far in the future, so both
-- backends pick the same one.

local FUTURE = "99999999999999"

return {
  { name = "XADD explicit ids, XLEN, XRANGE",
    steps = { { "XADD", "s", "5-1", "f", "v" }, { "XADD", "s", "5-2", "a", "1", "b", "2" },
      { "XADD", "s", "7", "g", "h" }, { "XLEN", "s" }, { "TYPE", "s" }, { "XRANGE", "s", "-", "+" },
      { "XRANGE", "s", "5-2", "+" }, { "XRANGE", "s", "-", "5" }, { "XRANGE", "s", "-", "+", "COUNT", "2" },
      { "XLEN", "missing" }, { "XRANGE", "missing", "-", "+" } } },
  { name = "XADD ms-* picks the next sequence",
    steps = { { "XADD", "s", "5-*", "f", "v" }, { "XADD", "s", "5-*", "f", "v" }, { "XADD", "s", "6-*", "f", "v" },
      { "XADD", "t", "0-*", "f", "v" } } },
  { name = "XADD * after an entry in the future",
    setup = { { "XADD", "s", FUTURE .. "-3", "f", "v" } },
    steps = { { "XADD", "s", "*", "f", "v" }, { "XADD", "s", "*", "f", "v" }, { "XLEN", "s" } } },
  { name = "XADD an id equal to the top", setup = { { "XADD", "s", "5-1", "f", "v" } },
    cmd = { "XADD", "s", "5-1", "f", "v" }, err_exact = true, error = true },
  { name = "XADD an id below the top", setup = { { "XADD", "s", "5-1", "f", "v" } },
    cmd = { "XADD", "s", "4", "f", "v" }, err_exact = true, error = true },
  { name = "XADD ms-* below the top", setup = { { "XADD", "s", "5-1", "f", "v" } },
    cmd = { "XADD", "s", "4-*", "f", "v" }, err_exact = true, error = true },
  { name = "XADD 0-0", cmd = { "XADD", "s", "0-0", "f", "v" }, err_exact = true, error = true },
  { name = "XADD an invalid id", cmd = { "XADD", "s", "abc", "f", "v" }, err_exact = true, error = true },
  { name = "XADD a field without a value", cmd = { "XADD", "s", "1-1", "f", "v", "g" }, err_exact = true,
    error = true },
  { name = "XADD NOMKSTREAM", steps = { { "XADD", "s", "NOMKSTREAM", "1-1", "f", "v" }, { "EXISTS", "s" },
    { "XADD", "t", "1-1", "f", "v" }, { "XADD", "t", "NOMKSTREAM", "2-1", "f", "v" }, { "XLEN", "t" } } },
  { name = "XADD on a string", setup = { { "SET", "s", "v" } }, cmd = { "XADD", "s", "1-1", "f", "v" },
    err_exact = true, error = true },
  { name = "XLEN on a list", setup = { { "RPUSH", "s", "v" } }, cmd = { "XLEN", "s" }, err_exact = true,
    error = true },
  { name = "GET and HSET on a stream", setup = { { "XADD", "s", "1-1", "f", "v" } },
    steps = { { "GET", "s", error = true, err_exact = true }, { "HSET", "s", "f", "v", error = true, err_exact = true },
      { "DEL", "s" }, { "EXISTS", "s" } } },
  { name = "XADD in a script, pcall of a bad id",
    script = "local id = redis.call('xadd', KEYS[1], '3-1', 'f', 'v') "
      .. "return {id, redis.pcall('xadd', KEYS[1], '2-1', 'f', 'v').err, redis.call('type', KEYS[1]).ok}",
    keys = { "s" }, args = {} },
}
