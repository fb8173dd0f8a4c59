-- allow.lua: decide for one user and, in mode "allow", record the action
-- when it is allowed (denied attempts are never recorded). Mode "peek"
-- writes nothing.
--
-- KEYS[1]  the user's sorted set (member -> time in ms)
-- ARGV     now (ms, or "" for Redis TIME), mode ("allow" | "peek"), member,
--          minttl (ms), gap, horizon, N1, W1, N2, W2, ...
-- Reply    {allowed 0|1, retry-after ms, denied rule (0 none, i limit i,
--          #limits+1 the gap), now ms, remaining 1, remaining 2, ...}
local key = KEYS[1]
local now = now_ms(ARGV[1])
local r = read_rules(ARGV, 5)
local t, denied, counts, last = decide(key, now, r, true)
local allowed = 0
if t == now then
  allowed = 1
  for i = 1, r.count do counts[i] = counts[i] + 1 end
  if ARGV[2] == 'allow' then
    record(key, now, r, now, ARGV[3], last, tonumber(ARGV[4]))
  end
end
local reply = {allowed, t - now, denied, now}
for i = 1, r.count do
  local rem = r.n[i] - counts[i]
  if rem < 0 then rem = 0 end
  reply[4 + i] = rem
end
return reply
