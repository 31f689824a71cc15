-- The publish command a script that publishes was given (its last fixed ARGV, named publish), as
-- Redisson 4.7 passes it: 'publish', or 'spublish' (Redis 7 sharded pub/sub, the channel's shard
-- only); Redis has no other. Returns it, or nil and the error reply.

local function publish_cmd(s)
  if s == 'publish' or s == 'spublish' then return s end
  return nil, redis.error_reply('RLK_BADPUBLISH publish must be exactly publish or spublish')
end
