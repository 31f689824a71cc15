-- Fence: the end of a fenced write. reply is what redis.pcall replied to the data command. An error
-- reply (the command changed nothing) becomes RLK_WRONGTYPE or RLK_CMDERR with the server's text and
-- the token is not recorded; otherwise the fence key records token when it is above highest (a plain
-- SET: the fence key never expires) and the command's reply is returned unchanged.

local function fence_done(fence, token, highest, reply)
  if type(reply) == 'table' and reply.err then
    local code = reply.err:find('^WRONGTYPE') and 'RLK_WRONGTYPE ' or 'RLK_CMDERR '
    return redis.error_reply(code .. 'the data command failed: ' .. reply.err)
  end
  if token > highest then
    redis.call('set', fence, string.format('%.0f', token))
  end
  return reply
end
