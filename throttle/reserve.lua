-- reserve.lua: Reserve and ReserveBatch, one or many requests in one
-- call (appended to lib.lua). Each request books the earliest instant at
-- which its user may act under an idempotency member, in order, all at
-- one now (TIME read once). A request's sets are the sorted sets its
-- booking is kept in: the user's global set and/or its category's set,
-- the home set (where an existing member is looked for) first; each has
-- its own rule set.
--
-- KEYS     per request, in order: the keys of its sets (nsets of them),
--          then, when it has a collapse key, the user's collapse hash:
--          "k:<category>:<collapse key>" -> the newest accepted member
--          booked with it, "x:<member>" -> the member that replaced it,
--          each valued "<until> <accepted> <member>": until (ms) is when
--          the booking it names leaves its set's window (the record is
--          deleted then), accepted (ms) the named push's accepted instant
--          (for x: the replacing push's); then, when its opt-out is 1,
--          the user's preferences hash ("o:<category>" for each category
--          the user opted out of).
-- ARGV[1]  now (ms, or "" for Redis TIME)
-- ARGV[2]  minttl (ms): the least TTL a written key gets
-- ARGV[3]  max pending (0: no cap)
-- ARGV[4]  collapse margin (ms): a held booking at most this far after now
--          is never collapsed
-- ARGV[5]  R, the number of rule sets, then R rule sets, each
--          gap, horizon, count, N1, W1, ..., Ncount, Wcount
-- then     per request, in one of two forms told by its first value:
--          the short form, a rule set k (1..R), member, not-after (ms or
--          ""): one set, of rule set k, and nothing else (the common
--          request: 3 values instead of 8); the full form, 0, member,
--          not-after, not-before (ms or ""), category ("" none), collapse
--          key ("" none), accepted (ms: the push's accepted instant, which
--          orders the pushes of one collapse key), nsets, the rule set
--          (1..R) of each of its sets, opt-out (1: the request's category
--          may be opted out of, and its user's preferences hash follows
--          its keys; 0: not),
--          nquiet, then nquiet quiet intervals start, end (ms, [start,
--          end), sorted, disjoint)
-- Reply    per request, in order: for a new booking (the member books
--          its slot now, and replaces no held booking), the slot (ms)
--          alone; else {slot ms, existing 0|1, now ms, refused,
--          member or ""}, the member the booking collapsed, or for a
--          'collapsed' refusal the member that replaced it ("" when not
--          known): refused is '' when the member holds
--          the slot, 'full' with slot = the earliest entry after now of
--          the set at the cap, 'late' with slot = the slot it would have
--          booked, 'collapsed' with slot = now (a newer push replaced the
--          member, or its key names a push accepted after it),
--          'opted_out' with slot = now (the user opted out of the
--          category: nothing booked, and the member's booking, if any,
--          removed from the request's sets), and, for a
--          new booking held after now or a 'late' one, a sixth element:
--          what holds the slot (held.go's codes: 1000 x set + rule, both
--          from 1, a set's gap after its limits; -1 its quiet hours; -2
--          not-before); or an error reply when the request's calls failed
--          (e.g. WRONGTYPE), which stops no other.
--          Then, after the last request's, now (ms), which every request
--          of the call shares. (A new booking, the common reply, is one
--          integer: a table of five per request cost Redis building it
--          and sending it.)
--
-- Node form (Redis Cluster): one call books requests of many users whose
-- keys a client's slot map places on one node. KEYS holds only the key
-- that routes the call there; ARGV[1] is 'node', ARGV[2] the number of
-- keys k, ARGV[3..2+k] the keys as KEYS above, and the arguments above
-- follow, each 2+k later. Redis lets a script without flags touch keys of
-- other slots its node serves. Before a request of this form writes
-- anything, its keys are looked up: one this node does not serve (another
-- node's slot, or a key already moved out of a slot being migrated) fails
-- the request alone with a reply starting "NOTHERE", and the caller books
-- it again on its own. A request with more than one key looks them all up
-- with one EXISTS; a request with one key (no category, no collapse key)
-- needs no lookup of its own: its first command is a count of that key
-- (first_count), made with pcall.
local keys_in, base = KEYS, 0
local node_form = ARGV[1] == 'node'
if node_form then
  local k = tonumber(ARGV[2])
  keys_in = {}
  for i = 1, k do
    keys_in[i] = ARGV[2 + i]
  end
  base = 2 + k
end
local now = now_ms(ARGV[base + 1])
local minttl = tonumber(ARGV[base + 2])
local max_pending = tonumber(ARGV[base + 3])
local margin = tonumber(ARGV[base + 4])
local nrules = tonumber(ARGV[base + 5])
-- Scores are whole ms, so an exclusive bound (x is x + 1.
local after_now = now + 1
-- A number given to redis.call is formatted ("%.17g") for every command;
-- when several requests (or sets) share the call, the bounds they share
-- are formatted once, here (fmt), which took a batched booking from 8.2 to
-- 8.7 us of Redis CPU to 7.1 to 7.5. Alone, a request gives the numbers as
-- they are: Redis formats them faster than Lua's string.format. (Not
-- through a table keyed by the numbers: gopher-lua, which miniredis runs,
-- grows a table's array part up to an integer key.)
local shared = #keys_in > 1
local function fmt(x)
  if shared then
    return string.format('%.17g', x)
  end
  return x
end
local now_s, after_now_s = fmt(now), fmt(after_now)
local arg = base + 6 -- the next ARGV to read
-- A rule set, with what every request of this call reads it with (they
-- share now): cut = now - horizon, for each rule the first instant of its
-- window, from = now - W + 1, and short, the rule with the shortest
-- window (nil without rules); the _s fields are them formatted (cut_s
-- when a trim first needs it).
local rulesets = {}
for k = 1, nrules do
  local r = {gap = tonumber(ARGV[arg]), horizon = tonumber(ARGV[arg + 1]), count = tonumber(ARGV[arg + 2]),
    n = {}, w = {}, from = {}}
  r.from_s = shared and {} or r.from
  arg = arg + 3
  for i = 1, r.count do
    local w = tonumber(ARGV[arg + 1])
    r.n[i], r.w[i], r.from[i] = tonumber(ARGV[arg]), w, now - w + 1
    if shared then r.from_s[i] = fmt(r.from[i]) end
    if r.short == nil or w < r.w[r.short] then r.short = i end
    arg = arg + 2
  end
  r.cut = now - r.horizon
  r.horizon_s = fmt(r.horizon)
  rulesets[k] = r
end
-- first_count is the count of key's entries from from on: the first
-- command a request without a collapse key runs (one with a collapse key
-- was looked up before it started). In the node form it is made with
-- pcall, and its error fails the request with NOTHERE, before anything
-- was written (see the node form above).
local function first_count(key, from)
  if not node_form then
    return redis.call('ZCOUNT', key, from, '+inf')
  end
  local c = redis.pcall('ZCOUNT', key, from, '+inf')
  if type(c) == 'table' and c.err then
    error({err = 'NOTHERE ' .. c.err})
  end
  return c
end
local L -- lib(), built the first time a request needs it
local tick = 0 -- requests seen, to spread the trims over a batch

-- held returns the slot member holds in key, or nil: a member whose entry
-- is at or before cut (older than the set's horizon) holds none.
local function held(key, member, cut)
  local s = redis.call('ZSCORE', key, member)
  if s then
    s = tonumber(s)
    if s > cut then return s end
  end
  return nil
end

-- put_back restores old (a held booking taken out for a collapse) in keys.
local function put_back(keys, old, old_at)
  if old then
    for b = 1, #keys do
      redis.call('ZADD', keys[b], old_at, old)
    end
  end
end

-- collapse_records reads a user's collapse hash: its live records by
-- field ({member, accepted}), and the fields to delete (stale: their
-- booking left its window) or rewrite (legacy) when the hash is written.
--
-- Compatibility for a rolling upgrade: a value that is a bare member was
-- written by a version that kept records forever. It is read as a push
-- accepted at 0 (any push with its key is newer) and rewritten with until
-- = now + the request's horizon, so it goes once that passes. Remove this
-- once every worker has run this version for the longest window of any
-- policy (every such hash is then rewritten or expired).
local function collapse_records(ckey)
  local h = redis.call('HGETALL', ckey)
  local rec = {live = {}, stale = {}, legacy = {}}
  for i = 1, #h, 2 do
    local f, v = h[i], h[i + 1]
    local u, a, m = string.match(v, '^(%-?%d+) (%-?%d+) (.*)$')
    if u == nil then
      rec.live[f] = {member = v, accepted = 0}
      rec.legacy[#rec.legacy + 1] = f
    elseif tonumber(u) <= now then
      rec.stale[#rec.stale + 1] = f
    else
      rec.live[f] = {member = m, accepted = tonumber(a)}
    end
  end
  return rec
end

-- collapse_value is a collapse record's value: until, accepted, member.
local function collapse_value(until_ms, accepted, member)
  return string.format('%.0f %.0f ', until_ms, accepted) .. member
end

-- empty_for tells whether a home set of rule set hr is known to hold no
-- entry in (now - d, now] from its counts hc. (A function of its own, not
-- a closure made per request.)
local function empty_for(hr, hc, d)
  for i = 1, hr.count do
    if hr.w[i] >= d and hc[i] == 0 then return true end
  end
  return false
end

-- first_above returns the index of the first of the sorted ts above v
-- (#ts + 1 when none).
local function first_above(ts, v)
  local lo, hi = 1, #ts + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if ts[mid] > v then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- held_code is what rules out instant x, the one just before a slot the
-- sweep found after its start (held.go): the first rule of bounds, in
-- order, whose ruled-out intervals (sweep's) hold x, else the quiet
-- intervals (-1). Only entries within a window or the gap of x can: each
-- rule looks at those alone. Called only for a held booking with entries
-- after now.
local function held_code(bounds, x, qs, qe)
  for b = 1, #bounds do
    local ts, r = bounds[b].ts, bounds[b].r
    local m = #ts
    for i = 1, r.count do
      local n, w = r.n[i], r.w[i]
      local j = first_above(ts, x - w) -- ts[j] + w > x
      while j + n - 1 <= m and ts[j + n - 1] - w < x do
        if ts[j + n - 1] - ts[j] < w then
          return b * 1000 + i
        end
        j = j + 1
      end
    end
    if r.gap > 0 then
      local j = first_above(ts, x - r.gap)
      if j <= m and ts[j] - r.gap < x then
        return b * 1000 + r.count + 1
      end
    end
  end
  for k = 1, #qs do
    if qs[k] <= x and x < qe[k] then return -1 end
  end
  return 0
end

-- newest returns the score of key's newest entry, or nil.
local function newest(key)
  local e = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
  if e[2] then return tonumber(e[2]) end
  return nil
end

-- reserve books one request: give an existing member its slot back,
-- refuse a collapsed member, take out the held booking with the same
-- collapse key (put back if this request books nothing), check the cap,
-- seek the slot, refuse it after not-after, record it. keys[b] is a set's
-- key, rs[b] its rule set; keys[1] is the home set, where an existing
-- member is looked for.
--
-- No set is trimmed before it is read, and the common case reads only
-- integers (replies holding members and scores cost a script several
-- times more to read): every read is a count by score range after now -
-- horizon, or a rank among the newest entries when at least that many lie
-- inside a window, so entries older than a set's horizon change no
-- decision, and a member booked that long ago holds no slot (booking it
-- again overwrites its score). Sets are trimmed when written, on about one
-- request in eight, which bounds their size at a fraction of the cost.
-- Without a collapse key, an existing member is looked for before a
-- sweep or a refusal, else found by the ZADD NX that records a new one.
local function reserve(keys, rs, ckey, pkey, member, not_after, not_before, category, collapse_key, accepted, qs, qe)
  if pkey and redis.call('HEXISTS', pkey, 'o:' .. category) == 1 then
    -- Opted out: no budget used, and a held booking is given back.
    for b = 1, #keys do
      redis.call('ZREM', keys[b], member)
    end
    return {now, 0, now, 'opted_out', ''}
  end
  local home, hr = keys[1], rs[1]
  local s
  local looked = ckey ~= nil -- whether the member was looked for already
  local old, old_at = nil, nil
  local rec, kf -- the collapse records and this key's field, with a key
  if ckey then
    s = held(home, member, hr.cut)
    if s then
      return {s, 1, now, '', ''}
    end
    rec, kf = collapse_records(ckey), 'k:' .. category .. ':' .. collapse_key
    local x = rec.live['x:' .. member]
    if x then
      return {now, 0, now, 'collapsed', x.member}
    end
    local k = rec.live[kf]
    if k and k.member ~= member then
      -- The newest accepted push wins: one accepted before the push the
      -- key names is stale, booked or not (on a tie the later booking
      -- wins).
      if accepted < k.accepted then
        return {now, 0, now, 'collapsed', k.member}
      end
      local at = redis.call('ZSCORE', home, k.member)
      if at and tonumber(at) > now + margin then
        old, old_at = k.member, tonumber(at)
        for b = 1, #keys do
          redis.call('ZREM', keys[b], old)
        end
      end
    end
  end
  -- The home set's entries after now (a second set's are among them):
  -- none when a rule's window is empty, as it counts them too, so the
  -- shortest window is counted first, cap or not: a user with nothing in
  -- it (most bookings) costs one count, not two, and a user holding
  -- bookings after now one count more than the cap alone would read.
  local hc = {} -- the home set's count per rule, once counted
  local fut
  if hr.short then
    local c = first_count(home, hr.from_s[hr.short])
    hc[hr.short] = c
    if c == 0 then fut = 0 end
  end
  if fut == nil then
    fut = first_count(home, after_now_s)
  end
  if max_pending > 0 then
    for b = 1, #keys do
      local c = fut
      if b > 1 then c = redis.call('ZCOUNT', keys[b], after_now_s, '+inf') end
      if c >= max_pending then
        if not looked then
          s = held(home, member, hr.cut)
          if s then
            return {s, 1, now, '', ''}
          end
        end
        local first = redis.call('ZRANGEBYSCORE', keys[b], after_now_s, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
        put_back(keys, old, old_at)
        return {tonumber(first[2]), 0, now, 'full', ''}
      end
    end
  end
  local t = now
  if not_before and not_before > t then t = not_before end
  -- by: what holds the slot (held_code's codes; 0 nothing). Where every
  -- rule's instants form a ray, the rule that moves t last holds it (the
  -- first in order on a tie), as held_code would find.
  local start, by = t, 0
  if t > now then by = -2 end
  local last -- the home set's newest entry, when read
  if fut == 0 then
    -- Every rule's feasible instants are a ray: the latest start wins. A
    -- rule whose window holds fewer than N entries from now - W on cannot
    -- deny any instant from now on. A second set's entries within its
    -- horizon are among the home set's, so a count of the home set bounds
    -- the second set's count in any window no longer than the home
    -- set's: when it is under the rule's N, the rule cannot deny and its
    -- ZCOUNT is skipped. A gap needs the newest entry only when no window
    -- at least that long is empty.
    for i = 1, hr.count do
      local n = hr.n[i]
      local c = hc[i]
      if c == nil then
        c = redis.call('ZCOUNT', home, hr.from_s[i], '+inf')
        hc[i] = c
      end
      if c >= n then
        local ti = tonumber(redis.call('ZREVRANGE', home, n - 1, n - 1, 'WITHSCORES')[2]) + hr.w[i]
        if ti > t then t, by = ti, 1000 + i end
      end
    end
    local read_last = false
    for b = 1, #keys do
      local key, r = keys[b], rs[b]
      if b > 1 then
        for i = 1, r.count do
          local n, w = r.n[i], r.w[i]
          local c
          for j = 1, hr.count do
            if hr.w[j] >= w and (c == nil or hc[j] < c) then c = hc[j] end
          end
          if c == nil or c >= n then
            c = redis.call('ZCOUNT', key, r.from_s[i], '+inf')
            if c >= n then
              local ti = tonumber(redis.call('ZREVRANGE', key, n - 1, n - 1, 'WITHSCORES')[2]) + w
              if ti > t then t, by = ti, b * 1000 + i end
            end
          end
        end
      end
      if r.gap > 0 and not empty_for(hr, hc, r.gap) then
        if not read_last then
          last, read_last = newest(home), true
        end
        if last and last + r.gap > t then
          local lb = last
          if b > 1 then lb = newest(key) end
          if lb and lb + r.gap > t then t, by = lb + r.gap, b * 1000 + r.count + 1 end
        end
      end
    end
    for k = 1, #qs do
      if qs[k] <= t and t < qe[k] then t, by = qe[k], -1 end
    end
  else
    -- The member may hold one of the bookings after now (a held push
    -- woken to check its slot): look before sweeping them all.
    if not looked then
      looked, s = true, held(home, member, hr.cut)
      if s then
        return {s, 1, now, '', ''}
      end
    end
    L = L or lib()
    local bounds = {}
    for b = 1, #keys do
      bounds[b] = {ts = L.entries(keys[b], now, rs[b]), r = rs[b]}
    end
    last = bounds[1].ts[#bounds[1].ts]
    t = L.sweep(bounds, t, qs, qe, nil)
    if t > start then by = held_code(bounds, t - 1, qs, qe) end
  end
  if not_after and t > not_after then
    if not looked then
      s = held(home, member, hr.cut)
      if s then
        return {s, 1, now, '', ''}
      end
    end
    put_back(keys, old, old_at)
    return {t, 0, now, 'late', '', by}
  end
  local trim = (now + tick + (string.byte(member, -1) or 0)) % 8 == 0
  if trim then
    hr.cut_s = hr.cut_s or fmt(hr.cut)
    redis.call('ZREMRANGEBYSCORE', home, '-inf', hr.cut_s)
  end
  local t_s = t -- formatted by Redis: it is this request's own
  if t == now then t_s = now_s end
  if redis.call('ZADD', home, 'NX', t_s, member) == 0 then
    -- The member was there: it holds its slot, unless its entry is older
    -- than the horizon (then it is booked again at t).
    s = held(home, member, hr.cut)
    if s then
      return {s, 1, now, '', ''}
    end
    redis.call('ZADD', home, t_s, member)
  end
  -- Each set lives until its newest entry (at most the home set's newest,
  -- or t) has aged out of its horizon. With no entry after now, t is the
  -- newest.
  local newest_at = t
  if last and last > newest_at then newest_at = last end
  local ttl = minttl
  for b = 1, #keys do
    if b > 1 then
      if trim then
        rs[b].cut_s = rs[b].cut_s or fmt(rs[b].cut)
        redis.call('ZREMRANGEBYSCORE', keys[b], '-inf', rs[b].cut_s)
      end
      redis.call('ZADD', keys[b], t_s, member)
    end
    local kt = newest_at - now + rs[b].horizon
    if kt < minttl then kt = minttl end
    local kt_s = kt
    if kt == rs[b].horizon then kt_s = rs[b].horizon_s end
    redis.call('PEXPIRE', keys[b], kt_s)
    if kt > ttl then ttl = kt end
  end
  if ckey then
    -- Each record lives while the booking it names is in its window:
    -- the newest push's record blocks older ones that long, the
    -- collapsed member's refuses it that long. Records past it go now,
    -- so the hash holds at most what the user's windows hold.
    for i = 1, #rec.stale, 256 do -- unpack's stack is bounded
      redis.call('HDEL', ckey, unpack(rec.stale, i, math.min(i + 255, #rec.stale)))
    end
    for _, f in ipairs(rec.legacy) do
      local r = rec.live[f]
      redis.call('HSET', ckey, f, collapse_value(now + hr.horizon, r.accepted, r.member))
    end
    redis.call('HSET', ckey, kf, collapse_value(t + hr.horizon, accepted, member))
    if old then
      redis.call('HSET', ckey, 'x:' .. old, collapse_value(old_at + hr.horizon, accepted, member))
      if old_at + hr.horizon - now > ttl then ttl = old_at + hr.horizon - now end
    end
    if redis.call('PTTL', ckey) < ttl then
      redis.call('PEXPIRE', ckey, ttl)
    end
  end
  if old then
    return {t, 0, now, '', old, by}
  end
  if by ~= 0 then
    return {t, 0, now, '', '', by}
  end
  return t
end

-- not_here returns the error of looking up a request's keys (its sets
-- and ckey) in one EXISTS when this node does not serve one of them, or
-- nil (node form only; they share the user's hash tag, so one slot). A
-- request with one key is looked up by its first_count instead.
local function not_here(keys, ckey, pkey)
  if #keys == 1 and not ckey and not pkey then
    return nil
  end
  local all = {unpack(keys)}
  if ckey then all[#all + 1] = ckey end
  if pkey then all[#all + 1] = pkey end
  local r = redis.pcall('EXISTS', unpack(all))
  if type(r) == 'table' and r.err then
    return r.err
  end
  return nil
end

local out = {}
local noquiet = {} -- the quiet intervals of a request without any
local key = 1 -- the next of keys_in to read
local nargv = #ARGV
while arg <= nargv do
  local form = tonumber(ARGV[arg])
  local member, not_after = ARGV[arg + 1], tonumber(ARGV[arg + 2])
  local not_before, category, collapse_key, accepted, keys, rs, ckey, pkey
  local qs, qe = noquiet, noquiet -- read only
  if form > 0 then
    not_before, category, collapse_key, accepted = nil, '', '', 0
    keys, rs = {keys_in[key]}, {rulesets[form]}
    key, arg = key + 1, arg + 3
  else
    not_before, category, collapse_key, accepted = tonumber(ARGV[arg + 3]), ARGV[arg + 4], ARGV[arg + 5], tonumber(ARGV[arg + 6])
    local nsets = tonumber(ARGV[arg + 7])
    arg = arg + 8
    keys, rs = {}, {}
    for b = 1, nsets do
      keys[b], rs[b] = keys_in[key], rulesets[tonumber(ARGV[arg])]
      key, arg = key + 1, arg + 1
    end
    if collapse_key ~= '' then
      ckey, key = keys_in[key], key + 1
    end
    if ARGV[arg] == '1' then
      pkey, key = keys_in[key], key + 1
    end
    local nquiet = tonumber(ARGV[arg + 1])
    arg = arg + 2
    if nquiet > 0 then
      qs, qe = {}, {}
    end
    for k = 1, nquiet do
      qs[k], qe[k] = tonumber(ARGV[arg]), tonumber(ARGV[arg + 1])
      arg = arg + 2
    end
  end
  tick = tick + 1
  local away = node_form and not_here(keys, ckey, pkey)
  local ok, reply
  if away then
    ok, reply = false, {err = 'NOTHERE ' .. away}
  else
    ok, reply = pcall(reserve, keys, rs, ckey, pkey, member, not_after, not_before, category, collapse_key, accepted, qs, qe)
  end
  if ok then
    out[#out + 1] = reply
  else
    out[#out + 1] = error_reply(reply)
  end
end
out[#out + 1] = now
return out
