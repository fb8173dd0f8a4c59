-- release.lua: give a booked slot back.
--
-- KEYS[1]  the user's sorted set (member -> time in ms)
-- ARGV     now (ms, or "" for Redis TIME), member, horizon
-- Reply    1 when the member was booked (and is now removed), else 0
local key = KEYS[1]
local now = lib().now_ms(ARGV[1])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - tonumber(ARGV[3]))
return redis.call('ZREM', key, ARGV[2])
