-- reserve_one.lua: Reserve for one user (appended to lib.lua and
-- reserve.lua).
--
-- KEYS[1]  the user's sorted set (member -> time in ms)
-- ARGV     now (ms, or "" for Redis TIME), member, minttl (ms), gap,
--          horizon, N1, W1, N2, W2, ...
-- Reply    reserve()'s array
return reserve(lib(), KEYS[1], now_ms(ARGV[1]), ARGV[2], tonumber(ARGV[3]), read_rules(ARGV, 4))
