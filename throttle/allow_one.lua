-- allow_one.lua: Allow or Peek for one user (appended to lib.lua and
-- allow.lua).
--
-- KEYS[1]  the user's sorted set (member -> time in ms)
-- ARGV     now (ms, or "" for Redis TIME), mode ("allow" | "peek"), member,
--          minttl (ms), gap, horizon, N1, W1, N2, W2, ...
-- Reply    allow()'s array
local now = now_ms(ARGV[1])
local mode = ARGV[2]
local member = ARGV[3]
local minttl = tonumber(ARGV[4])
local r = read_rules(ARGV, 5)
return allow(KEYS[1], now, mode, member, minttl, r)
