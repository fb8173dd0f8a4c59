-- reserve.lua: book the earliest instant at which the user may act, under
-- an idempotency member: a member already booked gets its slot back.
--
-- KEYS[1]  the user's sorted set (member -> time in ms)
-- ARGV     now (ms, or "" for Redis TIME), member, minttl (ms), gap,
--          horizon, N1, W1, N2, W2, ...
-- Reply    {slot ms, existing 0|1, now ms}
local key = KEYS[1]
local L = lib()
local now = L.now_ms(ARGV[1])
local r = L.read_rules(ARGV, 4)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - r.horizon)
local s = redis.call('ZSCORE', key, ARGV[2])
if s then
  return {tonumber(s), 1, now}
end
local t, _, _, last = L.decide(key, now, r, false)
L.record(key, now, r, t, ARGV[2], last, tonumber(ARGV[3]))
return {t, 0, now}
