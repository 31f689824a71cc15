-- SPDX-License-Identifier: BSD-3-Clause
-- Specs of scripts/fastmulti/*.lua (Redisson's faster MultiLock: many values of one group in one
-- hash) on the backend RLK_BACKEND picks (mock or a real redis-server).
package.path = "spec/?.lua;" .. package.path
local backend = require("support.backend")
local helpers = require("support.helpers")
local sa = require("script_asserts")

local it_virtual = helpers.it_virtual
local NIL = backend.NIL
local GROUP, CHANNEL = "class_100", "redisson_lock__channel:{class_100}"
local A, B = "5f0c-uuid-a:1", "5f0c-uuid-b:9"
local LEASE = 30000

-- RedissonFasterMultiLock.tryLockInnerAsync (Redisson 4.7): ARGV lease, now (client clock),
-- owner, values.
local REDISSON_ACQUIRE = [[
local leaseTime = tonumber(ARGV[1]);
local currentTime = tonumber(ARGV[2]);
local currentThread = ARGV[3];
local maxExpireTime = -1;
local keyExist = nil;
if (tonumber(redis.call('exists',KEYS[1])) > 0) then
   keyExist = 1;
   for i=4, #ARGV, 1 do
       local lockThread = redis.call('hget', KEYS[1], ARGV[i]);
       if(lockThread ~= false and lockThread ~= currentThread) then
           local expireFieldName = ARGV[i]..':'..lockThread..':expire_time';
           local expireTime = redis.call('hget', KEYS[1], expireFieldName);
           if(expireTime ~= false and tonumber(expireTime) > currentTime ) then
               if(tonumber(expireTime) > maxExpireTime) then
                   maxExpireTime = tonumber(expireTime);
               end;
           end
       end;
   end;
else
   keyExist = 0;
end;
if( maxExpireTime ~= -1) then
   return maxExpireTime-currentTime;
end;
for i=4, #ARGV, 1 do
   redis.call('hset', KEYS[1], ARGV[i], currentThread);
   local expireFieldName = ARGV[i]..':'..currentThread..':expire_time'
   local expireTime = redis.call('hget', KEYS[1], expireFieldName);
   local newExpireTime = leaseTime + currentTime
   if(expireTime == false or tonumber(expireTime) < newExpireTime ) then
      redis.call('hset', KEYS[1], expireFieldName, newExpireTime);
   end;
   redis.call('HINCRBY', KEYS[1], ARGV[i]..':'..currentThread..':lock_count', 1);
end;
if(keyExist == 1) then
   local expireTime = redis.call('pttl',KEYS[1]);
   if(tonumber(expireTime) > 0 and leaseTime > tonumber(expireTime)) then
       redis.call('pexpire',KEYS[1], leaseTime);
   end;
else
    redis.call('pexpire',KEYS[1], leaseTime);
end;
return nil;
]]

local r = backend.new()

local function args(first, values)
  local a = {}
  for _, x in ipairs(first) do a[#a + 1] = x end
  for _, v in ipairs(values) do a[#a + 1] = v end
  return a
end
local function acquire(owner, values, lease)
  return r:script("fastmulti/acquire", { GROUP }, args({ tostring(lease or LEASE), owner }, values))
end
local function release(owner, values, lease, pub)
  return r:script("fastmulti/release", { GROUP, CHANNEL },
    args({ owner, tostring(lease or LEASE), pub or "publish" }, values))
end
local function renew(owner, lease)
  return r:script("fastmulti/renew", { GROUP }, { tostring(lease or LEASE), owner })
end
local function force(values, pub)
  return r:script("fastmulti/force_release", { GROUP, CHANNEL }, args({ pub or "publish" }, values))
end
local function held(owner, values)
  return r:script("fastmulti/held", { GROUP }, args({ owner }, values))
end
local function counts(owner, values)
  return r:script("fastmulti/counts", { GROUP }, args({ owner }, values))
end
local function hget(f) return r:call("HGET", GROUP, f) end
local function expire_of(v, owner) return tonumber(hget(v .. ":" .. owner .. ":expire_time")) end

before_each(function() r:reset() end)

describe("fastmulti/acquire", function()
  it("takes free values: Redisson's fields, lease on the hash, nothing published", function()
    local t0 = r:time_ms()
    assert.equal(NIL, acquire(A, { "jack", "mary" }))
    local t1 = r:time_ms()
    for _, v in ipairs({ "jack", "mary" }) do
      assert.equal(A, hget(v))
      assert.equal("1", hget(v .. ":" .. A .. ":lock_count"))
      local e = expire_of(v, A)
      assert.is_true(e >= t0 + LEASE and e <= t1 + LEASE, "expire_time " .. tostring(e))
    end
    assert.equal(6, r:call("HLEN", GROUP))
    sa.assert_pttl(r, GROUP, LEASE, LEASE - sa.TTL_SLACK_MS)
    assert.same({}, r:published())
  end)

  it("re-enters: every value's lock_count goes up by one", function()
    assert.equal(NIL, acquire(A, { "jack", "mary" }))
    assert.equal(NIL, acquire(A, { "mary" }))
    assert.equal("1", hget("jack:" .. A .. ":lock_count"))
    assert.equal("2", hget("mary:" .. A .. ":lock_count"))
  end)

  it("refuses all when one value is another's: replies the wait, changes nothing", function()
    assert.equal(NIL, acquire(B, { "mary" }, 5000))
    local before = sa.snapshot(r, { GROUP })
    local ttl = acquire(A, { "jack", "mary", "tom" })
    assert.is_number(ttl)
    assert.is_true(ttl > 0 and ttl <= 5000, "ttl " .. tostring(ttl))
    sa.assert_unchanged(r, before)
    assert.equal(NIL, hget("jack"))
  end)

  it("replies the latest expire_time among the other holders", function()
    assert.equal(NIL, acquire(B, { "jack" }, 2000))
    assert.equal(NIL, acquire("other:3", { "mary" }, 9000))
    local ttl = acquire(A, { "jack", "mary" })
    assert.is_true(ttl > 2000 and ttl <= 9000, "ttl " .. tostring(ttl))
  end)

  it("takes values whose holders are disjoint from the held ones", function()
    assert.equal(NIL, acquire(B, { "mary" }))
    assert.equal(NIL, acquire(A, { "jack", "tom" }))
    assert.equal(B, hget("mary"))
    assert.equal(A, hget("tom"))
  end)

  it_virtual("takes a value whose holder's expire_time passed, dropping that holder's fields", function()
    assert.equal(NIL, acquire(B, { "mary" }, 1000))
    r:call("PEXPIRE", GROUP, "60000")     -- another holder kept the hash alive
    r:advance(1001)
    assert.equal(NIL, acquire(A, { "mary" }))
    assert.equal(A, hget("mary"))
    assert.equal(NIL, hget("mary:" .. B .. ":expire_time"))
    assert.equal(NIL, hget("mary:" .. B .. ":lock_count"))
    assert.equal("1", hget("mary:" .. A .. ":lock_count"))
  end)

  it_virtual("counts the owner's own lapsed hold from 1 again", function()
    assert.equal(NIL, acquire(A, { "mary" }, 1000))
    assert.equal(NIL, acquire(A, { "mary" }, 1000))
    r:call("PEXPIRE", GROUP, "60000")
    r:advance(1001)
    assert.equal(NIL, acquire(A, { "mary" }))
    assert.equal("1", hget("mary:" .. A .. ":lock_count"))
  end)

  it_virtual("raises a hash TTL of 0 (the last holder's time ran out this millisecond)", function()
    assert.equal(NIL, acquire(B, { "mary" }, 1000))
    r:advance(1000)                       -- B's expire_time is now; the hash's PTTL 0
    assert.equal(0, r:call("PTTL", GROUP))
    assert.equal(NIL, acquire(A, { "mary" }))
    assert.is_true(r:call("PTTL", GROUP) > LEASE - sa.TTL_SLACK_MS)
    r:advance(1)
    assert.equal(A, hget("mary"))
  end)

  it("never shortens the hash's TTL", function()
    assert.equal(NIL, acquire(B, { "mary" }, 90000))
    assert.equal(NIL, acquire(A, { "jack" }, 1000))
    assert.is_true(r:call("PTTL", GROUP) > 80000)
  end)

  it("refuses a group key that is not a hash with RLK_WRONGTYPE, changing nothing", function()
    for _, setup in ipairs({ { "SET", "%s", "x" }, sa.OTHER_TYPES.list, sa.OTHER_TYPES.set,
                             sa.OTHER_TYPES.zset }) do
      r:call("DEL", GROUP)
      sa.make(r, setup, GROUP)
      local before = sa.snapshot(r, { GROUP })
      sa.assert_error(acquire(A, { "jack" }), "RLK_WRONGTYPE")
      sa.assert_unchanged(r, before)
    end
  end)

  describe("refuses bad arguments without changing anything", function()
    before_each(function()
      assert.equal(NIL, acquire(B, { "mary" }, 5000))
    end)
    it("a lease that is not an integer in 1..10^12", function()
      for _, lease in ipairs(sa.BAD_LEASES) do
        local before = sa.snapshot(r, { GROUP })
        sa.assert_error(acquire(A, { "jack" }, lease), "RLK_BADLEASE")
        sa.assert_unchanged(r, before)
      end
    end)
    it("an empty owner or one longer than 1024 bytes", function()
      for _, owner in ipairs({ "", string.rep("x", 1025) }) do
        local before = sa.snapshot(r, { GROUP })
        sa.assert_error(acquire(owner, { "jack" }), "RLK_BADOWNER")
        sa.assert_unchanged(r, before)
      end
    end)
    it("a value that is empty, too long, has ':' or comes twice", function()
      for _, values in ipairs({ { "" }, { string.rep("v", 1025) }, { "jack", "a:b" },
                                { "jack", "tom", "jack" } }) do
        local before = sa.snapshot(r, { GROUP })
        sa.assert_error(acquire(A, values), "RLK_BADVALUE")
        sa.assert_unchanged(r, before)
      end
    end)
    it("the wrong number of keys or arguments", function()
      for _, case in ipairs({ { {}, { "1000", A, "jack" } }, { { GROUP, CHANNEL }, { "1000", A, "jack" } },
                              { { GROUP }, { "1000", A } } }) do
        local before = sa.snapshot(r, { GROUP })
        sa.assert_error(r:script("fastmulti/acquire", case[1], case[2]), "RLK_BADARG")
        sa.assert_unchanged(r, before)
      end
    end)
  end)

  it("shares its data with Redisson's script: each refuses the other's holder, the fields match", function()
    local now = r:time_ms()
    assert.equal(NIL, r:eval(REDISSON_ACQUIRE, { GROUP }, { "5000", tostring(now), B, "jack", "mary" }))
    local ttl = acquire(A, { "mary", "tom" })
    assert.is_number(ttl)
    assert.is_true(ttl > 0 and ttl <= 5000, "ttl " .. tostring(ttl))
    assert.equal(NIL, acquire(A, { "tom" }))
    local theirs = r:eval(REDISSON_ACQUIRE, { GROUP }, { "5000", tostring(r:time_ms()), B, "tom" })
    assert.is_number(theirs)
    assert.is_true(theirs > 0 and theirs <= LEASE)
    -- the same field names and values as Redisson writes for the same holder and value
    r:reset()
    now = r:time_ms()
    assert.equal(NIL, r:eval(REDISSON_ACQUIRE, { GROUP }, { "5000", tostring(now), A, "jack" }))
    local names = {}
    local flat = r:call("HGETALL", GROUP)
    for i = 1, #flat, 2 do names[#names + 1] = flat[i] end
    table.sort(names)
    r:reset()
    assert.equal(NIL, acquire(A, { "jack" }))
    local ours = {}
    flat = r:call("HGETALL", GROUP)
    for i = 1, #flat, 2 do ours[#ours + 1] = flat[i] end
    table.sort(ours)
    assert.same(names, ours)
  end)
end)

describe("fastmulti/release", function()
  it("releases every value: owner's fields deleted, message 0 published, replies 1", function()
    assert.equal(NIL, acquire(B, { "tom" }))
    assert.equal(NIL, acquire(A, { "jack", "mary" }))
    r:published()
    assert.equal(1, release(A, { "jack", "mary" }))
    assert.equal(NIL, hget("jack"))
    assert.equal(NIL, hget("mary:" .. A .. ":expire_time"))
    assert.equal(3, r:call("HLEN", GROUP))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
  end)

  it("the last holder's release deletes the hash", function()
    assert.equal(NIL, acquire(A, { "jack" }))
    assert.equal(1, release(A, { "jack" }))
    assert.equal(0, r:call("EXISTS", GROUP))
  end)

  it("replies 0 while a re-entered value is still counted; extends it", function()
    assert.equal(NIL, acquire(A, { "jack", "mary" }, 1000))
    assert.equal(NIL, acquire(A, { "mary" }, 1000))
    r:published()
    assert.equal(0, release(A, { "jack", "mary" }, 60000))
    assert.equal(NIL, hget("jack"))
    assert.equal("1", hget("mary:" .. A .. ":lock_count"))
    assert.is_true(expire_of("mary", A) > r:time_ms() + 50000)
    assert.is_true(r:call("PTTL", GROUP) > 50000)
    assert.equal(1, #r:published())    -- jack was freed
  end)

  it("replies nil and changes nothing when one value is not owner's", function()
    assert.equal(NIL, acquire(A, { "jack" }))
    assert.equal(NIL, acquire(B, { "mary" }))
    r:published()
    local before = sa.snapshot(r, { GROUP })
    assert.equal(NIL, release(A, { "jack", "mary" }))
    sa.assert_unchanged(r, before)
    assert.same({}, r:published())
    assert.equal(NIL, release(A, { "tom" }))
  end)

  it_virtual("replies nil for a hold whose expire_time passed", function()
    assert.equal(NIL, acquire(A, { "jack" }, 1000))
    r:call("PEXPIRE", GROUP, "60000")
    r:advance(1001)
    assert.equal(NIL, release(A, { "jack" }))
  end)

  it("publishes with spublish when told", function()
    assert.equal(NIL, acquire(A, { "jack" }))
    r:ssubscribe(CHANNEL)
    r:published()
    assert.equal(1, release(A, { "jack" }, nil, "spublish"))
    local m = r:published()
    assert.equal(1, #m)
    assert.is_true(m[1].sharded)
  end)

  it("refuses bad arguments without changing anything", function()
    assert.equal(NIL, acquire(A, { "jack" }))
    local before = sa.snapshot(r, { GROUP })
    sa.assert_error(release(A, { "jack" }, nil, "pub"), "RLK_BADPUBLISH")
    sa.assert_error(release(A, { "jack" }, "0"), "RLK_BADLEASE")
    sa.assert_error(release("", { "jack" }), "RLK_BADOWNER")
    sa.assert_error(release(A, { "jack", "jack" }), "RLK_BADVALUE")
    sa.assert_error(release(A, {}), "RLK_BADARG")
    sa.assert_unchanged(r, before)
  end)
end)

describe("fastmulti/renew", function()
  it("extends every live value owner holds in the group and the hash, replies 1", function()
    assert.equal(NIL, acquire(A, { "jack", "mary" }, 1000))
    assert.equal(NIL, acquire(B, { "tom" }, 1000))
    assert.equal(1, renew(A, 60000))
    local now = r:time_ms()
    assert.is_true(expire_of("jack", A) > now + 50000)
    assert.is_true(expire_of("mary", A) > now + 50000)
    assert.is_true(expire_of("tom", B) <= now + 1000)
    assert.is_true(r:call("PTTL", GROUP) > 50000)
  end)

  it("replies 0 when owner holds nothing there", function()
    assert.equal(0, renew(A))
    assert.equal(NIL, acquire(B, { "tom" }))
    local before = sa.snapshot(r, { GROUP })
    assert.equal(0, renew(A))
    sa.assert_unchanged(r, before)
  end)

  it_virtual("does not bring back a lapsed hold", function()
    assert.equal(NIL, acquire(A, { "jack" }, 1000))
    r:call("PEXPIRE", GROUP, "60000")
    r:advance(1001)
    assert.equal(0, renew(A))
  end)

  it("refuses bad arguments", function()
    sa.assert_error(renew(A, "0"), "RLK_BADLEASE")
    sa.assert_error(renew(""), "RLK_BADOWNER")
    sa.assert_error(r:script("fastmulti/renew", { GROUP }, { "1000" }), "RLK_BADARG")
    r:call("SET", GROUP, "x")
    sa.assert_error(renew(A), "RLK_WRONGTYPE")
  end)
end)

describe("fastmulti/force_release", function()
  it("drops the values whoever holds them and publishes 0; leaves the others", function()
    assert.equal(NIL, acquire(A, { "jack" }))
    assert.equal(NIL, acquire(B, { "mary", "tom" }))
    r:published()
    assert.equal(1, force({ "jack", "mary", "nobody" }))
    assert.equal(NIL, hget("jack"))
    assert.equal(NIL, hget("mary:" .. B .. ":lock_count"))
    assert.equal(B, hget("tom"))
    assert.same({ { channel = CHANNEL, message = "0" } }, r:published())
  end)

  it("replies 0 and publishes nothing when no value is held", function()
    assert.equal(0, force({ "jack" }))
    assert.same({}, r:published())
  end)

  it("refuses bad arguments", function()
    sa.assert_error(force({ "jack" }, "x"), "RLK_BADPUBLISH")
    sa.assert_error(force({ "a:b" }), "RLK_BADVALUE")
    sa.assert_error(force({}), "RLK_BADARG")
  end)
end)

describe("fastmulti/held", function()
  it("counts the values held by owner, or by anyone", function()
    assert.equal(NIL, acquire(A, { "jack", "mary" }))
    assert.equal(NIL, acquire(B, { "tom" }))
    assert.equal(2, held(A, { "jack", "mary", "tom" }))
    assert.equal(3, held("", { "jack", "mary", "tom", "nobody" }))
    assert.equal(0, held(B, { "jack" }))
  end)

  it_virtual("does not count a hold whose expire_time passed", function()
    assert.equal(NIL, acquire(A, { "jack" }, 1000))
    r:call("PEXPIRE", GROUP, "60000")
    r:advance(1001)
    assert.equal(0, held("", { "jack" }))
  end)
end)

describe("fastmulti/counts", function()
  it("gives owner's lock_count of each value, 0 for a free value or another holder's", function()
    assert.equal(NIL, acquire(A, { "jack", "mary" }))
    assert.equal(NIL, acquire(A, { "mary" }))
    assert.equal(NIL, acquire(B, { "tom" }))
    assert.same({ 1, 2, 0, 0 }, counts(A, { "jack", "mary", "tom", "nobody" }))
    assert.same({ 1 }, counts(B, { "tom" }))
    assert.same({ 0 }, counts(B, { "jack" }))
  end)

  it("gives 0 for owner's lapsed hold (its fields still there, expire_time passed)", function()
    local past = tostring(r:time_ms() - 5000)
    r:call("HSET", GROUP, "jack", A, "jack:" .. A .. ":expire_time", past,
      "jack:" .. A .. ":lock_count", "3")
    assert.equal(NIL, acquire(A, { "mary" }))
    assert.same({ 0, 1 }, counts(A, { "jack", "mary" }))
  end)

  it_virtual("gives 0 once owner's hold lapses", function()
    assert.equal(NIL, acquire(A, { "jack" }, 1000))
    r:call("PEXPIRE", GROUP, "60000")
    assert.same({ 1 }, counts(A, { "jack" }))
    r:advance(1001)
    assert.same({ 0 }, counts(A, { "jack" }))
  end)

  it("changes nothing", function()
    assert.equal(NIL, acquire(A, { "jack" }))
    local before = r:call("HGETALL", GROUP)
    counts(A, { "jack", "mary" })
    assert.same(before, r:call("HGETALL", GROUP))
  end)

  it("refuses bad arguments", function()
    sa.assert_error(r:script("fastmulti/counts", { GROUP }, { A }), "RLK_BADARG")
    sa.assert_error(counts("", { "jack" }), "RLK_BADOWNER")
    sa.assert_error(counts(A, { "a:b" }), "RLK_BADVALUE")
    sa.assert_error(counts(A, { "a", "a" }), "RLK_BADVALUE")
    r:call("SET", GROUP, "x")
    sa.assert_error(counts(A, { "jack" }), "RLK_WRONGTYPE")
  end)
end)
