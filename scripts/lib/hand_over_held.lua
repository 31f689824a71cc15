-- Reentrant lock, the lock just freed: hands it to the first waiter of the queue, as lib/hand_over
-- does (the rule and the bound of 16 are the same; the read-write lock's writers keep hand_over),
-- and, for a waiter that said it takes held grants, writes the lock in its name (docs/runtime.md,
-- "Held grants"). who: the hash {lock}:rlk_who (field <ticket> -> "<lease_ms><tag> <owner>", tag
-- ":<wait>" or "", written by the waiter's reentrant/acquire with ARGV held[:<wait>]), or nil: then
-- exactly lib/hand_over. For each ticket t popped:
--   t >= 2^25 with a record in who: the record goes (the ticket left the queue); the held grant
--     "<t * 2^26 + 2^25><tag> <owner>" is published on its wake channel (no value published before
--     held grants has bit 25 set there: those are t * 2^26; the owner and the wait, so that another
--     waiter that drew the same ticket, of the same client or of another one on the same wake
--     channel, or a later wait of the same holder id, does not take it for its own). Reached a
--     subscriber (its client listens): the
--     lock is written in its name (HSET lock <owner> 1, PEXPIRE lock <lease_ms>) and who's field
--     'held' -> "<t><tag> <owner>" lets a later cancel or acquire of that wait recognise the grant
--     (who lives 60 s from then, as from a waiter's join: the mark may be all it holds). Reached
--     nobody: dropped as a dead waiter, the next one popped. Refused (ACL): reserved as today;
--     a record naming self (the holder id that frees the lock now) is dropped too, unpublished:
--     that holder is releasing, not waiting, so the record is one its wait left when its give-up
--     (reentrant/cancel) never ran, and writing the lock back in its name would leave it held by
--     nobody who knows (held grants are for ids rlk makes, one wait of an id at a time);
--   any other ticket: today's reservation and grant (lib/hand_over).
-- known: the first ticket's record as the caller read it (false: none), or nil (not read: read
-- here). self: the holder id that frees the lock. Returns the ticket granted and true when it
-- holds the lock, the ticket when it is reserved, or nil. The caller publishes the unlock message 0
-- on channel only when nothing was held: a held handoff never leaves the lock free (Redisson's
-- waiters would wake to find it held).

local function hand_over_held(head, lock, waiters, grant, who, claim_ms, channel, publish, known,
                              self)
  local reserved = false
  for _ = 1, 16 do
    if not head then
      break
    end
    local t, rec = tonumber(head), known
    known = nil
    if t and t >= 1 and t % 1 == 0 then
      if not (who and t >= 33554432) then
        rec = false
      elseif rec == nil then
        rec = redis.call('hget', who, head)
      end
      local lease_ms, tag, owner
      if rec then
        redis.call('hdel', who, head)
        lease_ms, tag, owner = rec:match('^([1-9]%d*)(:?%d*) (.+)$')
      end
      local wake = channel .. ':rlk:' .. string.format('%d', math.floor(t / 1024))
      if owner and owner ~= self then
        local n = redis.pcall(publish, wake, string.format('%.0f', t * 67108864 + 33554432) .. tag
                              .. ' ' .. owner)
        if type(n) == 'number' and n > 0 then
          if reserved then
            redis.call('del', grant)
          end
          redis.call('hset', lock, owner, '1')
          redis.call('pexpire', lock, lease_ms)
          redis.call('hset', who, 'held', head .. tag .. ' ' .. owner)
          redis.call('pexpire', who, 60000)
          return head, true
        end
        if type(n) ~= 'number' then
          redis.call('set', grant, head, 'PX', claim_ms)
          return head
        end
      elseif not owner then
        redis.call('set', grant, head, 'PX', claim_ms)
        reserved = true
        if t < 33554432 then
          local nxt = tonumber(redis.call('lindex', waiters, 0)) or 0
          redis.pcall(publish, channel, string.format('%.0f', t * 67108864 + nxt))
          return head
        end
        local n = redis.pcall(publish, wake, string.format('%.0f', t * 67108864))
        if type(n) ~= 'number' or n > 0 then
          return head
        end
      end  -- else a stale record of self (above): the next ticket
    end
    head = redis.call('lpop', waiters)
  end
  if reserved then
    redis.call('del', grant)
  end
  return nil
end
