-- reserve_one.lua: Reserve for one user (appended to lib.lua and
-- reserve.lua).
--
-- KEYS[1]  the user's sorted set (member -> time in ms)
-- ARGV     now (ms, or "" for Redis TIME), member, not-after (ms, or "" for
--          none), max pending (0 for no cap), minttl (ms), gap, horizon,
--          N1, W1, N2, W2, ...
-- Reply    reserve()'s array
local now = now_ms(ARGV[1])
local member = ARGV[2]
local not_after = tonumber(ARGV[3]) -- nil for ""
local max_pending = tonumber(ARGV[4])
local minttl = tonumber(ARGV[5])
local r = read_rules(ARGV, 6)
return reserve(lib(), KEYS[1], now, member, not_after, max_pending, minttl, r)
