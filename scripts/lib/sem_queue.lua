-- Semaphore (RSemaphore, RPermitExpirableSemaphore) acquire that did not take permits: the waiter
-- me ("<ticket> <permits>", t its ticket: > 0 new, < 0 queued already) stays in the queue
-- waiters, or joins it at the tail; the list lives as long as waiters come. lost: its own
-- reservation was claimed but could not be served (drained, or a Redisson client took permits
-- meanwhile): queued again at the tail, as a reentrant-lock grantee beaten by Redisson. Returns
-- whether it may be first (then it listens on the semaphore's channel too).

local function sem_queue(waiters, me, t, lost)
  if lost then
    redis.call('rpush', waiters, me)
    redis.call('pexpire', waiters, 60000)
    return true
  end
  local queued = t < 0 and redis.call('lpos', waiters, me) or false
  if queued then
    return queued == 0
  end
  local len = redis.call('rpush', waiters, me)
  redis.call('pexpire', waiters, 60000)
  -- Queued again after losing its place: it may be first without a grant saying so.
  return len == 1 or t < 0
end
