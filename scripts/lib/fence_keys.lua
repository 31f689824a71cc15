-- Fence: nil when the fence key and the data key may be used together, else an error reply. They
-- must differ and carry the same non-empty hash tag (the text between the first '{' and the next
-- '}'), so they share one slot on a cluster and a script that works on one server keeps working on
-- a cluster: RLK_CROSSSLOT otherwise (a cluster would refuse the call with CROSSSLOT).

local function fence_keys(fence, data)
  if fence == data then
    return redis.error_reply('RLK_BADARG the fence key and the data key must differ')
  end
  local a, b = fence:match('^[^{]*{([^}]+)}'), data:match('^[^{]*{([^}]+)}')
  if not a or a ~= b then
    return redis.error_reply('RLK_CROSSSLOT the fence key and the data key must carry the same {hash tag}')
  end
  return nil
end
