-- status.lua: describe one user; writes nothing.
--
-- KEYS[1]  the user's sorted set (member -> time in ms)
-- ARGV     now (ms, or "" for Redis TIME), gap, horizon, N1, W1, N2, W2, ...
-- Reply    {now ms, next allowed ms, remaining 1 .. remaining #limits,
--          member 1, time 1, member 2, time 2, ...} (entries after
--          now - horizon, oldest first)
local key = KEYS[1]
local now = now_ms(ARGV[1])
local r = read_rules(ARGV, 2)
local L = lib()
local ts, raw = L.entries(key, now, r)
local t = now
if #ts > 0 and ts[#ts] > now then
  t = L.scan(ts, now, r, false)
else
  t = L.past(key, now, r, ts[#ts])
end
local reply = {now, t}
local counts = L.counts_of(ts, now, r)
for i = 1, r.count do
  local rem = r.n[i] - counts[i]
  if rem < 0 then rem = 0 end
  reply[#reply + 1] = rem
end
for i = 1, #raw, 2 do
  reply[#reply + 1] = raw[i]
  reply[#reply + 1] = tonumber(raw[i + 1])
end
return reply
