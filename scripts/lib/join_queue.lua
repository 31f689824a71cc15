-- Reentrant lock, and the read-write lock's writers: an attempt that did not take the lock keeps
-- its waiter in the queue of tickets, or puts it there (docs/runtime.md, "Handoff across
-- processes"). t: the attempt's ticket (0: a single try, never queued; t > 0: a new waiter; t < 0:
-- one that may be queued already), me its decimal |t|; reserved: what GET grant replied when the
-- caller read it (false: no reservation), nil when it did not (the lock is held); who: the held
-- grants' hash {lock}:rlk_who of a waiter that takes them, else nil. Returns whether the waiter is
-- first in the queue (it then listens on the lock's channel too), or nil and the reply to return
-- instead, nothing written then: RLK_WRONGTYPE when a companion key holds another type; -4 when a
-- waiter that takes held grants asks with a ticket neither queued nor recorded.

local function join_queue(waiters, grant, t, me, reserved, who)
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
  if not queued and t < 0 and who and redis.call('hexists', who, me) == 0 then
    -- Held grants (docs/runtime.md, "Held grants"): the ticket left the queue (a grant, held or
    -- reserved, popped it; a release passed it over) or never joined, and a held grant's message
    -- names nothing but the ticket and the owner: one published before, read late (its lock's
    -- lease run out meanwhile, another holder in), would pass for a grant of the ticket queued
    -- again. It is not queued again: the waiter draws a new ticket.
    return nil, -4
  end
  if not queued then
    local n = redis.pcall('rpush', waiters, me)
    if type(n) == 'table' then
      return nil, redis.error_reply('RLK_WRONGTYPE waiters key holds a '
        .. redis.call('type', waiters).ok .. ', not a list')
    end
    redis.call('pexpire', waiters, 60000)
    -- Queued again after losing its place (its grant ran out while a Redisson client held the
    -- lock): the first waiter may not know it is first (a grant made it so), and only the lock's
    -- channel tells of that client's release; this waiter listens there as well.
    first = n == 1 or t < 0
  end
  return first
end
