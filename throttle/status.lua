-- status.lua: read one user's sets; writes nothing. The Go side decides
-- what they mean (status.go), as it does for the in-memory limiter.
--
-- KEYS     the user's sets (the global set, then each category's)
-- ARGV     now (ms, or "" for Redis TIME), then each key's horizon (ms)
-- Reply    {now ms, then per key: n, member 1, time 1, ..., member n,
--          time n} (entries after now - horizon, oldest first)
local now = now_ms(ARGV[1])
local reply = {now}
for i = 1, #KEYS do
  local raw = redis.call('ZRANGEBYSCORE', KEYS[i], '(' .. (now - tonumber(ARGV[1 + i])), '+inf', 'WITHSCORES')
  reply[#reply + 1] = #raw / 2
  for j = 1, #raw, 2 do
    reply[#reply + 1] = raw[j]
    reply[#reply + 1] = tonumber(raw[j + 1])
  end
end
return reply
