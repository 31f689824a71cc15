-- Reentrant lock, and the read-write lock's writers: an attempt that did not take the lock keeps
-- its waiter in the queue of tickets, or puts it there (docs/runtime.md, "Handoff across
-- processes"). t: the ticket (0: a single try, never queued; > 0: a new waiter; < 0: one that may
-- be queued), me its decimal |t|; reserved: GET grant's reply (false: none), nil if not read (the
-- lock is held); who: {lock}:rlk_who of a waiter that takes held grants, else nil; rec: the
-- ticket's record there, written with the ticket when queued here, or nil. Returns whether the
-- waiter is first (it then listens on the lock's channel too), nil, and whether rec was written;
-- or nil and the reply instead, nothing written: RLK_WRONGTYPE ('who' for the who key, which the
-- caller words), or -4: held grants, a ticket neither queued nor recorded.

local function join_queue(waiters, grant, t, me, reserved, who, rec)
  if t == 0 then
    return false
  end
  local queued = t < 0 and redis.pcall('lpos', waiters, me) or false
  if type(queued) == 'table' then
    return nil, redis.error_reply('RLK_WRONGTYPE waiters key holds a '
      .. redis.call('type', waiters).ok .. ', not a list')
  end
  local first = queued == 0
  if not queued and t < 0 and reserved == nil then
    -- Held, and this waiter is not in the queue: a Redisson client may have taken the lock in its
    -- claim window. While the lock is still reserved for it, it stays out of the queue, so that
    -- its claim leaves no second entry behind.
    reserved = redis.pcall('get', grant)
    if type(reserved) == 'table' then
      return nil, redis.error_reply('RLK_WRONGTYPE grant key holds a '
        .. redis.call('type', grant).ok .. ', not a string')
    end
    queued = reserved == me
    first = queued
  end
  local known = not queued and t < 0 and who and redis.pcall('hexists', who, me)
  if type(known) == 'table' then
    return nil, 'who'
  end
  if known == 0 then
    -- Held grants (docs/runtime.md): the ticket left the queue (a grant popped it, a release
    -- passed it over) or never joined; an old grant of it, read late, would pass for a grant of
    -- the ticket queued again. It is not queued again: the waiter draws a new ticket.
    return nil, -4
  end
  if not queued then
    local n = redis.pcall('rpush', waiters, me)
    if type(n) == 'table' then
      return nil, redis.error_reply('RLK_WRONGTYPE waiters key holds a '
        .. redis.call('type', waiters).ok .. ', not a list')
    end
    if rec and type(redis.pcall('hset', who, me, rec)) == 'table' then
      redis.call('lrem', waiters, -1, me)  -- the entry just pushed, the last: the queue as it was
      return nil, 'who'
    end
    redis.call('pexpire', waiters, 60000)
    -- Queued again after losing its place (its grant ran out while a Redisson client held the
    -- lock): the first waiter may not know it is first (a grant made it so), and only the lock's
    -- channel tells of that client's release; this waiter listens there as well.
    first = n == 1 or t < 0
    return first, nil, rec ~= nil
  end
  return first
end
