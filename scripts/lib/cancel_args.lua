-- A waiter's cancel (reentrant/cancel, rwlock/cancel): checks its 4 keys and 3 arguments (ticket,
-- an integer in 1..67108863; claim_ms, lib/is_lease; the publish command, lib/publish_cmd).
-- Returns the publish command, or nil and the RLK_BADARG or RLK_BADPUBLISH reply. Needs
-- lib/is_lease and lib/publish_cmd.

local function cancel_args()
  if #KEYS ~= 4 or #ARGV ~= 3 then
    return nil, redis.error_reply('RLK_BADARG expected 4 keys and 3 arguments')
  end
  local publish, bad_publish = publish_cmd(ARGV[3])
  if not publish then
    return nil, bad_publish
  end
  local ticket = ARGV[1]
  local t = tonumber(ticket)
  if not t or t % 1 ~= 0 or t < 1 or t > 67108863 or tostring(t) ~= ticket then
    return nil, redis.error_reply('RLK_BADARG ticket must be an integer in 1..67108863')
  end
  if not is_lease(ARGV[2]) then
    return nil, redis.error_reply('RLK_BADARG claim_ms must be an integer in 1..1000000000000')
  end
  return publish
end
