-- lib.lua: helpers shared by every throttle script; the Go side prepends
-- this file to each script (see scripts.go).
--
-- now_ms and read_rules are plain top-level functions; everything else sits
-- inside lib(), so a script pays for creating those closures only when it
-- calls lib(): allow.lua's common case does not.
--
-- Times are integer milliseconds. A policy travels in ARGV as
--   gap, horizon, N1, W1, N2, W2, ...
-- where horizon = max(longest window, gap): entries at or before
-- now - horizon can no longer affect any decision.

-- now_ms returns the time an ARGV now argument names: the number, or Redis
-- TIME for "".
local function now_ms(arg)
  if arg ~= '' then
    return tonumber(arg)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- read_rules reads a policy from argv[i] on (to the end of argv).
local function read_rules(argv, i)
  local r = {gap = tonumber(argv[i]), horizon = tonumber(argv[i + 1]), n = {}, w = {}, count = 0}
  for j = i + 2, #argv, 2 do
    r.count = r.count + 1
    r.n[r.count] = tonumber(argv[j])
    r.w[r.count] = tonumber(argv[j + 1])
  end
  return r
end

-- error_reply turns an error caught by pcall into an error reply element:
-- real Redis raises a table {err = message}, gopher-lua (miniredis) a
-- string.
local function error_reply(e)
  if type(e) == 'table' and e.err then
    return {err = e.err}
  end
  return {err = tostring(e)}
end

local function lib()
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

  -- sweep returns the earliest instant >= t that keeps every rule of every
  -- bound (a bound is {ts = sorted times, r = rules}) and lies in no quiet
  -- interval [qs[k], qe[k]) (sorted, disjoint); with only = {b, i} it
  -- keeps rule i of bound b alone (i = count+1: the gap) and ignores the
  -- quiet intervals. Each rule rules out open intervals of instants: a
  -- limit N/W, for every N consecutive entries less than W apart,
  -- (last - W, first + W); the gap, for every entry e, (e - gap, e + gap).
  -- Per rule these come in ascending order with ts, so one pointer per
  -- rule walks them while t only moves forward: O(entries x rules), no
  -- sorting. The answer is t or the right end of an interval (some e+W,
  -- e+gap or quiet end).
  local function sweep(bounds, t, qs, qe, only)
    local at, changed, qi = {}, true, 1
    for b = 1, #bounds do
      at[b] = {}
      for i = 1, bounds[b].r.count + 1 do at[b][i] = 1 end
    end
    while changed do
      changed = false
      for b = 1, #bounds do
        local ts, r, ptr = bounds[b].ts, bounds[b].r, at[b]
        local m = #ts
        for i = 1, r.count + 1 do
          if only == nil or (only[1] == b and only[2] == i) then
            local j = ptr[i]
            if i <= r.count then
              local n, w = r.n[i], r.w[i]
              while j + n - 1 <= m and ts[j + n - 1] - w < t do
                if ts[j + n - 1] - ts[j] < w and ts[j] + w > t then
                  t, changed = ts[j] + w, true
                end
                j = j + 1
              end
            elseif r.gap > 0 then
              local g = r.gap
              while j <= m and ts[j] - g < t do
                if ts[j] + g > t then
                  t, changed = ts[j] + g, true
                end
                j = j + 1
              end
            end
            ptr[i] = j
          end
        end
      end
      if only == nil then
        while qi <= #qs and qs[qi] <= t do
          if t < qe[qi] then
            t, changed = qe[qi], true
          end
          qi = qi + 1
        end
      end
    end
    return t
  end

  -- scan decides for one set with entries after now (bookings). Returns
  -- earliest and, when blame is set, the denied rule: among the rules that
  -- rule out now, the one whose own earliest instant is latest.
  local function scan(ts, now, r, blame)
    local bounds = {{ts = ts, r = r}}
    local t = sweep(bounds, now, {}, {}, nil)
    if t == now or not blame then return t, 0 end
    local denied, worst = 0, now
    for i = 1, r.count + 1 do
      local ti = sweep(bounds, now, {}, {}, {1, i})
      if ti > worst then denied, worst = i, ti end
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

  -- decide returns earliest, denied rule (when blame is set), per-rule counts
  -- and the newest entry (nil when empty).
  local function decide(key, now, r, blame)
    local last = newest(key)
    if last == nil or last <= now then
      local t, denied, counts = past(key, now, r, last)
      return t, denied, counts, last
    end
    local ts = entries(key, now, r)
    local t, denied = scan(ts, now, r, blame)
    return t, denied, counts_of(ts, now, r), last
  end

  return {decide = decide, entries = entries, sweep = sweep, past = past}
end
