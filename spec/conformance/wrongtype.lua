-- SPDX-License-Identifier: BSD-3-Clause
-- Conformance cases: every data command against a key of another type.
-- Each case stores a value of the wrong type at "k" and expects the exact
-- WRONGTYPE error, and that the value is unchanged afterwards.

local function value_of(kind)
  if kind == "string" then return { "SET", "k", "v" }, { "GET", "k" } end
  if kind == "hash" then return { "HSET", "k", "f", "v" }, { "HGETALL", "k" } end
  if kind == "list" then return { "RPUSH", "k", "a", "b" }, { "LRANGE", "k", "0", "-1" } end
  return { "ZADD", "k", "1", "m" }, { "ZRANGE", "k", "0", "-1", "WITHSCORES" }
end

-- { command argv on key "k", a type it does not accept }
local MATRIX = {
  { { "GET", "k" }, "hash" }, { { "SET", "k", "v", "GET" }, "list" }, { { "INCR", "k" }, "list" },
  { { "INCRBY", "k", "2" }, "hash" }, { { "DECR", "k" }, "zset" }, { { "DECRBY", "k", "2" }, "hash" },
  { { "GETDEL", "k" }, "zset" }, { { "STRLEN", "k" }, "list" },
  { { "HSET", "k", "f", "v" }, "string" }, { { "HGET", "k", "f" }, "list" }, { { "HDEL", "k", "f" }, "string" },
  { { "HEXISTS", "k", "f" }, "zset" }, { { "HINCRBY", "k", "f", "1" }, "list" }, { { "HLEN", "k" }, "string" },
  { { "HGETALL", "k" }, "list" }, { { "HKEYS", "k" }, "zset" }, { { "HVALS", "k" }, "string" },
  { { "HMGET", "k", "f" }, "list" },
  { { "LPUSH", "k", "a" }, "hash" }, { { "RPUSH", "k", "a" }, "string" }, { { "LPOP", "k" }, "zset" },
  { { "RPOP", "k", "2" }, "string" }, { { "LLEN", "k" }, "hash" }, { { "LINDEX", "k", "0" }, "string" },
  { { "LRANGE", "k", "0", "-1" }, "zset" }, { { "LREM", "k", "0", "a" }, "hash" },
  { { "LSET", "k", "0", "a" }, "string" },
  { { "SADD", "k", "a" }, "list" }, { { "SREM", "k", "a" }, "hash" }, { { "SISMEMBER", "k", "a" }, "string" },
  { { "SCARD", "k" }, "zset" }, { { "SMEMBERS", "k" }, "list" },
  { { "ZADD", "k", "1", "a" }, "hash" }, { { "ZADD", "k", "NX", "CH", "1", "a" }, "string" },
  { { "ZREM", "k", "a" }, "list" }, { { "ZSCORE", "k", "a" }, "string" }, { { "ZCARD", "k" }, "hash" },
  { { "ZRANGE", "k", "0", "-1" }, "list" }, { { "ZRANGEBYSCORE", "k", "-inf", "+inf" }, "string" },
  { { "ZREMRANGEBYSCORE", "k", "0", "1" }, "hash" }, { { "ZRANK", "k", "a" }, "list" },
  { { "ZCOUNT", "k", "0", "1" }, "string" }, { { "ZINCRBY", "k", "1", "a" }, "hash" },
}

local cases = {}
for _, entry in ipairs(MATRIX) do
  local argv, kind = entry[1], entry[2]
  local store, read = value_of(kind)
  cases[#cases + 1] = {
    name = table.concat(argv, " ") .. " on a " .. kind,
    setup = { store },
    cmd = argv,
    err_exact = true,
    error = true,
    steps = { read, { "TYPE", "k" } },
  }
end
return cases
