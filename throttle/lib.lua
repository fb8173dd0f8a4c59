-- lib.lua: helpers shared by every throttle script; the Go side prepends
-- this file to allow.lua, reserve.lua, release.lua and status.lua.
--
-- Times are integer milliseconds. A policy travels in ARGV as
--   gap, horizon, N1, W1, N2, W2, ...
-- where horizon = max(longest window, gap): entries at or before
-- now - horizon can no longer affect any decision.

local function now_ms(arg)
  if arg ~= '' then
    return tonumber(arg)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function read_rules(argv, i)
  local r = {gap = tonumber(argv[i]), horizon = tonumber(argv[i + 1]), n = {}, w = {}, count = 0}
  for j = i + 2, #argv, 2 do
    r.count = r.count + 1
    r.n[r.count] = tonumber(argv[j])
    r.w[r.count] = tonumber(argv[j + 1])
  end
  return r
end

-- newest returns the score of the newest entry, or nil.
local function newest(key)
  local e = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
  if e[2] then
    return tonumber(e[2])
  end
  return nil
end

-- past decides when no entry lies after now: O(log n) per rule.
-- Returns earliest, denied rule (0 none, count+1 the gap), and per rule the
-- entries in (now-W, now].
local function past(key, now, r, last)
  local t, denied, counts = now, 0, {}
  for i = 1, r.count do
    local c = redis.call('ZCOUNT', key, '(' .. (now - r.w[i]), '+inf')
    counts[i] = c
    if c >= r.n[i] then
      local e = redis.call('ZREVRANGE', key, r.n[i] - 1, r.n[i] - 1, 'WITHSCORES')
      local ti = tonumber(e[2]) + r.w[i]
      if ti > t then
        t, denied = ti, i
      end
    end
  end
  if r.gap > 0 and last and last + r.gap > t then
    t, denied = last + r.gap, r.count + 1
  end
  return t, denied, counts
end

-- entries returns the sorted times (and the raw member/score list) of the
-- entries after now - horizon.
local function entries(key, now, r)
  local raw = redis.call('ZRANGEBYSCORE', key, '(' .. (now - r.horizon), '+inf', 'WITHSCORES')
  local ts = {}
  for i = 2, #raw, 2 do
    ts[#ts + 1] = tonumber(raw[i])
  end
  return ts, raw
end

-- below returns the number of entries < t.
local function below(ts, t)
  local lo, hi = 1, #ts + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if ts[mid] < t then lo = mid + 1 else hi = mid end
  end
  return lo - 1
end

-- ok reports whether inserting t keeps rule i (count+1: the gap).
local function ok(ts, t, r, i)
  local m = #ts
  local p = below(ts, t)
  if i > r.count then
    local g = r.gap
    if g == 0 then return true end
    if p >= 1 and t - ts[p] < g then return false end
    if p < m and ts[p + 1] - t < g then return false end
    return true
  end
  local n, w = r.n[i], r.w[i]
  if m < n then return true end
  -- L' = ts[1..p], t, ts[p+1..m] (0-based index j: ts[j+1] before t, ts[j]
  -- after); every n+1 consecutive entries including t span at least w.
  for k = math.max(0, p + n - m), math.min(n, p) do
    local lo, hi = p - k, p - k + n
    local a, b = t, t
    if lo < p then a = ts[lo + 1] end
    if hi > p then b = ts[hi] end
    if b - a < w then return false end
  end
  return true
end

-- scan decides with entries after now (bookings): tests the candidates now,
-- e+W and e+gap in ascending order. Returns earliest and denied rule.
local function scan(ts, now, r)
  local cand = {now}
  for _, e in ipairs(ts) do
    for i = 1, r.count do
      if e + r.w[i] > now then cand[#cand + 1] = e + r.w[i] end
    end
    if r.gap > 0 and e + r.gap > now then cand[#cand + 1] = e + r.gap end
  end
  table.sort(cand)
  local function first(rule)
    local prev
    for _, c in ipairs(cand) do
      if c ~= prev then
        prev = c
        local good = true
        if rule then
          good = ok(ts, c, r, rule)
        else
          for i = 1, r.count + 1 do
            if not ok(ts, c, r, i) then good = false break end
          end
        end
        if good then return c end
      end
    end
    return cand[#cand]
  end
  local t = first(nil)
  if t == now then return t, 0 end
  local denied, worst = 0, 0
  for i = 1, r.count + 1 do
    if not ok(ts, now, r, i) then
      local ti = first(i)
      if denied == 0 or ti > worst then denied, worst = i, ti end
    end
  end
  return t, denied
end

-- counts returns, per rule, the entries of ts in (now-W, now].
local function counts_of(ts, now, r)
  local c, upto = {}, below(ts, now + 1)
  for i = 1, r.count do
    c[i] = upto - below(ts, now - r.w[i] + 1)
  end
  return c
end

-- decide returns earliest, denied rule, per-rule counts and the newest entry
-- (nil when empty).
local function decide(key, now, r)
  local last = newest(key)
  if last == nil or last <= now then
    local t, denied, counts = past(key, now, r, last)
    return t, denied, counts, last
  end
  local ts = entries(key, now, r)
  local t, denied = scan(ts, now, r)
  return t, denied, counts_of(ts, now, r), last
end

-- record adds (t, member), drops aged-out entries and sets the TTL to cover
-- the newest entry plus the horizon (at least minttl).
local function record(key, now, r, t, member, last, minttl)
  redis.call('ZADD', key, t, member)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - r.horizon)
  local newest_at = t
  if last and last > newest_at then newest_at = last end
  local ttl = newest_at - now + r.horizon
  if ttl < minttl then ttl = minttl end
  redis.call('PEXPIRE', key, ttl)
end
