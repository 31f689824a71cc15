-- SPDX-License-Identifier: BSD-3-Clause
-- Conformance cases: set commands. An all-integer set (intset) lists in
-- numeric order in Redis 7.0; other sets list in hash order, so those
-- listings are compared sorted.

return {
  { name = "SADD counts new members", steps = { { "SADD", "s", "a", "b", "a" }, { "SADD", "s", "b", "c" },
    { "SCARD", "s" }, { "SMEMBERS", "s", sort = true } } },
  { name = "SMEMBERS of an integer set is in numeric order", setup = { { "SADD", "s", "10", "-3", "2", "100" } },
    cmd = { "SMEMBERS", "s" } },
  { name = "SMEMBERS of a missing key", cmd = { "SMEMBERS", "s" } },
  { name = "SREM counts and removes the empty set", setup = { { "SADD", "s", "a", "b" } },
    steps = { { "SREM", "s", "a", "x" }, { "EXISTS", "s" }, { "SREM", "s", "b" }, { "EXISTS", "s" },
      { "SREM", "s", "b" } } },
  { name = "SISMEMBER and SMISMEMBER", setup = { { "SADD", "s", "a" } },
    steps = { { "SISMEMBER", "s", "a" }, { "SISMEMBER", "s", "b" }, { "SISMEMBER", "missing", "a" },
      { "SMISMEMBER", "s", "a", "b", "a" }, { "SMISMEMBER", "missing", "a" } } },
  { name = "SCARD of a missing key", cmd = { "SCARD", "s" } },
  { name = "SADD on a string", setup = { { "SET", "s", "v" } }, cmd = { "SADD", "s", "a" },
    err_exact = true, error = true },
  { name = "SISMEMBER on a hash", setup = { { "HSET", "s", "f", "v" } }, cmd = { "SISMEMBER", "s", "f" },
    err_exact = true, error = true },
  { name = "SADD with too few arguments", cmd = { "SADD", "s" }, err_exact = true, error = true },
}
