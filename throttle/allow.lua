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
-- helper closures. One ZREVRANGE reads the newest min(max N, FETCH)
-- entries: they give the last entry (for the gap) and, for every rule with
-- N <= FETCH, how many entries lie in its window and, when it denies, the
-- N-th most recent one. A rule with a larger N costs a ZCOUNT (and a
-- ZREVRANGE by index when it denies). When allowed, ZREMRANGEBYSCORE runs
-- only if there may be something to trim: the read returned all the
-- entries it asked for (there may be older ones) or one at or before
-- now - horizon. With bookings after now,
-- lib() sweeps the user's recent entries.
local FETCH = 16
local function allow(key, now, mode, member, minttl, r)
  local gap, horizon, nrules = r.gap, r.horizon, r.count
  local m = 1
  for i = 1, nrules do
    if r.n[i] > m then m = r.n[i] end
  end
  if m > FETCH then m = FETCH end
  local top = redis.call('ZREVRANGE', key, 0, m - 1, 'WITHSCORES')
  local last = top[2] and tonumber(top[2])
  local t, denied, counts = now, 0, {}
  local trim = true
  if last and last > now then
    local L = lib()
    t, denied, counts = L.decide(key, now, r, true)
  else
    local ts = {} -- the fetched scores, newest first
    for j = 2, #top, 2 do
      ts[j / 2] = tonumber(top[j])
    end
    local k = #ts
    trim = k == m or (k > 0 and ts[k] <= now - horizon)
    for i = 1, nrules do
      local n, w = r.n[i], r.w[i]
      local c, nth
      if n <= m then
        -- Fewer than n fetched in the window is the exact count; n or more
        -- denies, and the count only matters up to n (remaining is 0).
        c = 0
        while c < k and ts[c + 1] > now - w do c = c + 1 end
        if c >= n then nth = ts[n] end
      else
        c = redis.call('ZCOUNT', key, '(' .. (now - w), '+inf')
        if c >= n then
          local e = redis.call('ZREVRANGE', key, n - 1, n - 1, 'WITHSCORES')
          nth = tonumber(e[2])
        end
      end
      counts[i] = c
      if nth and nth + w > t then
        t, denied = nth + w, i
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
      redis.call('ZADD', key, now, member)
      if trim then
        redis.call('ZREMRANGEBYSCORE', key, '-inf', now - horizon)
      end
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
