-- The fenced lock's acquisition once its arguments are checked (fenced/acquire, fenced/reenter):
-- the reply for owner taking lock with a lease of lease_ms. Refused (another holds it): the
-- holder's PTTL. Taken or re-entered: {token}, a new token max(last + 1, TIME in us) written to
-- token_key (no TTL, so a Redisson client's INCR counts on from it), except that a re-entry
-- whose given token is the last one issued gets that token again (fenced/reenter; nil: never).
-- A re-entry never shortens the hold: its TTL becomes max(PTTL, lease_ms), and a hold without
-- a TTL keeps none (PEXPIRE GT), since another process with the same holder id (a nested rlk, a
-- child handed the id) may count on the longer lease of the hold it entered.

--- @include "lib/lock_type"

--- @include "lib/int"

-- The last token a token key holds (nil when there is no key), or nil and an error reply.
--- @include "lib/load_token"

-- Server time in microseconds since the epoch.
--- @include "lib/now_us"

local function fenced_take(lock, token_key, lease_ms, owner, given)
  local kind, wrong = lock_type(lock, owner)
  if not kind then return wrong end
  local last, err = load_token(token_key)
  if err then return err end
  if kind == 'hash' and redis.call('hexists', lock, owner) == 0 then
    return redis.call('pttl', lock)
  end
  local token
  if kind == 'hash' and last and given == last then
    -- owner holds the lock and no acquisition has issued a token since (every one issues a
    -- larger one), so the hold that token was issued to never ended: the enclosing holder and
    -- this re-entry write as one holder.
    token = last
  else
    token = math.max((last or 0) + 1, now_us())
    redis.call('set', token_key, int(token))
  end
  redis.call('hincrby', lock, owner, 1)
  if kind == 'hash' then
    redis.call('pexpire', lock, lease_ms, 'GT')
  else
    redis.call('pexpire', lock, lease_ms)
  end
  return { token }
end
