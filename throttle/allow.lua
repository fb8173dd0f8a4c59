-- allow.lua: allow(key, now, mode, member, minttl, r), the decision for one
-- user, shared by allow_one.lua (Allow, Peek) and allow_batch.lua
-- (AllowBatch). In mode "allow" it records the action under member when it
-- is allowed (denied attempts are never recorded); mode "peek" writes
-- nothing. r is a policy from read_rules.
--
-- Returns  {allowed 0|1, retry-after ms, denied rule (0 none, i limit i,
--          #limits+1 the gap), now ms, remaining 1, remaining 2, ...}
--
-- The common case (no booking after now) is written out here without
-- helper closures, with calls that answer integers: replies holding
-- members and scores (ZREVRANGE ... WITHSCORES) cost a script several times
-- more to read. Bookings after now are spotted with one ZCOUNT (a
-- ZREVRANGE 0 0 for the last entry when there is a gap rule), then per rule
-- one ZCOUNT, plus, when it denies, one ZREVRANGE by index for the N-th most
-- recent entry. When allowed, ZREMRANGEBYSCORE runs only when ZCARD shows
-- entries outside the horizon (when no rule's window is the horizon, it
-- always runs). With bookings after now, lib() sweeps the user's recent
-- entries.
local function allow(key, now, mode, member, minttl, r)
  local gap, horizon, nrules = r.gap, r.horizon, r.count
  local last
  local future
  if gap > 0 then
    local newest = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
    last = newest[2] and tonumber(newest[2])
    future = last and last > now
  else
    future = redis.call('ZCOUNT', key, '(' .. now, '+inf') > 0
  end
  local t, denied, counts = now, 0, {}
  local inside -- entries in (now - horizon, now], when a rule's window is the horizon
  if future then
    local L = lib()
    t, denied, counts, last = L.decide(key, now, r, true)
  else
    for i = 1, nrules do
      local n, w = r.n[i], r.w[i]
      local c = redis.call('ZCOUNT', key, '(' .. (now - w), '+inf')
      counts[i] = c
      if w == horizon then inside = c end
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
    if mode == 'allow' then
      if inside == nil or redis.call('ZCARD', key) ~= inside then
        redis.call('ZREMRANGEBYSCORE', key, '-inf', now - horizon)
      end
      redis.call('ZADD', key, now, member)
      local ttl = horizon
      if last and last > now then ttl = last - now + horizon end
      if ttl < minttl then ttl = minttl end
      redis.call('PEXPIRE', key, ttl)
    end
  end
  local reply = {allowed, t - now, denied, now}
  for i = 1, nrules do
    local rem = r.n[i] - counts[i] - allowed
    if rem < 0 then rem = 0 end
    reply[4 + i] = rem
  end
  return reply
end
