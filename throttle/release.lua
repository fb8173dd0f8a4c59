-- release.lua: give a booked slot back.
--
-- KEYS[1]  the user's sorted set (member -> time in ms)
-- ARGV     now (ms, or "" for Redis TIME), member, horizon
-- Reply    1 when the member was booked (and is now removed), else 0
local key = KEYS[1]
local now = now_ms(ARGV[1])
local member = ARGV[2]
local horizon = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - horizon)
return redis.call('ZREM', key, member)
