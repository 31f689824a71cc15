-- Semaphore: adds permits (> 0) to the count at semaphore and returns the new count. Its own
-- helper, included before lib/sem_rise, so that a release script's write stands before its
-- PUBLISH in the expanded text as in the order it runs: a PUBLISH an ACL refuses then comes after
-- every write (RLK_ERR_NOTIFY: released, the message refused; it_acl_recipe checks the text).

local function sem_add(semaphore, permits)
  return redis.call('incrby', semaphore, permits)
end
