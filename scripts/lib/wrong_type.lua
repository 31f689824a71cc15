-- The reason when key holds another type than want (what: the key's role, for the message), else nil.

local function wrong_type(key, want, what)
  local kind = redis.call('type', key).ok
  if kind ~= 'none' and kind ~= want then
    return what .. ' key holds a ' .. kind .. ', not a ' .. want
  end
end
