-- allow.lua: decide for one user and, in mode "allow", record the action
-- when it is allowed (denied attempts are never recorded). Mode "peek"
-- writes nothing.
--
-- KEYS[1]  the user's sorted set (member -> time in ms)
-- ARGV     now (ms, or "" for Redis TIME), mode ("allow" | "peek"), member,
--          minttl (ms), gap, horizon, N1, W1, N2, W2, ...
-- Reply    {allowed 0|1, retry-after ms, denied rule (0 none, i limit i,
--          #limits+1 the gap), now ms, remaining 1, remaining 2, ...}
--
-- The common case (no booking after now) is written out here without
-- helper closures: per rule one ZCOUNT, and when it denies one ZREVRANGE by
-- index for the N-th most recent entry. With bookings after now, lib()
-- sweeps the user's recent entries.
local key = KEYS[1]
local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
end
local gap, horizon = tonumber(ARGV[5]), tonumber(ARGV[6])
local nrules = (#ARGV - 6) / 2
local newest = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
local last = newest[2] and tonumber(newest[2])
local t, denied, counts = now, 0, {}
if last and last > now then
  local L = lib()
  t, denied, counts = L.decide(key, now, L.read_rules(ARGV, 5), true)
else
  for i = 1, nrules do
    local n, w = tonumber(ARGV[5 + 2 * i]), tonumber(ARGV[6 + 2 * i])
    local c = redis.call('ZCOUNT', key, '(' .. (now - w), '+inf')
    counts[i] = c
    if c >= n then
      local e = redis.call('ZREVRANGE', key, n - 1, n - 1, 'WITHSCORES')
      local ti = tonumber(e[2]) + w
      if ti > t then
        t, denied = ti, i
      end
    end
  end
  if gap > 0 and last and last + gap > t then
    t, denied = last + gap, nrules + 1
  end
end
local allowed = 0
if t == now then
  allowed = 1
  if ARGV[2] == 'allow' then
    redis.call('ZADD', key, now, ARGV[3])
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - horizon)
    local ttl = horizon
    if last and last > now then ttl = last - now + horizon end
    local minttl = tonumber(ARGV[4])
    if ttl < minttl then ttl = minttl end
    redis.call('PEXPIRE', key, ttl)
  end
end
local reply = {allowed, t - now, denied, now}
for i = 1, nrules do
  local rem = tonumber(ARGV[5 + 2 * i]) - counts[i] - allowed
  if rem < 0 then rem = 0 end
  reply[4 + i] = rem
end
return reply
