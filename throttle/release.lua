-- release.lua: give a booked slot back, from every set of the user that
-- holds it.
--
-- KEYS     the user's sets (the global set, then each category's)
-- ARGV     now (ms, or "" for Redis TIME), member, then each key's horizon
--          (ms): entries at or before now - horizon are trimmed first
-- Reply    1 when some set held the member (it is removed from all), else 0
local now = now_ms(ARGV[1])
local member = ARGV[2]
local found = 0
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - tonumber(ARGV[2 + i]))
  if redis.call('ZREM', KEYS[i], member) == 1 then
    found = 1
  end
end
return found
