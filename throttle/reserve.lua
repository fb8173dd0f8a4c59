-- reserve.lua: Reserve and ReserveBatch, one or many requests in one
-- call (appended to lib.lua). Each request books the earliest instant at
-- which its user may act under an idempotency member, in order, all at
-- one now (TIME read once). A request's sets are the sorted sets its
-- booking is kept in: the user's global set and/or its category's set,
-- the home set (where an existing member is looked for) first; each has
-- its own rule set.
--
-- KEYS     per request, in order: the keys of its sets (nsets of them),
--          then, when it has a collapse key, the user's collapse hash
--          ("k:<category>:<collapse key>" -> the member booked last with
--          it; "x:<member>" -> the member that replaced it).
-- ARGV[1]  now (ms, or "" for Redis TIME)
-- ARGV[2]  minttl (ms): the least TTL a written key gets
-- ARGV[3]  max pending (0: no cap)
-- ARGV[4]  collapse margin (ms): a held booking at most this far after now
--          is never collapsed
-- ARGV[5]  R, the number of rule sets, then R rule sets, each
--          gap, horizon, count, N1, W1, ..., Ncount, Wcount
-- then     per request: member, not-after (ms or ""), not-before (ms or
--          ""), category ("" none), collapse key ("" none), nsets, the
--          rule set (1..R) of each of its sets, nquiet, then nquiet quiet
--          intervals start, end (ms, [start, end), sorted, disjoint)
-- Reply    per request {slot ms, existing 0|1, now ms, refused,
--          collapsed member or ""}: refused is '' when the member holds
--          the slot, 'full' with slot = the earliest entry after now of
--          the set at the cap, 'late' with slot = the slot it would have
--          booked, 'collapsed' with slot = now; or an error reply when the
--          request's calls failed (e.g. WRONGTYPE), which stops no other.
local now = now_ms(ARGV[1])
local minttl = tonumber(ARGV[2])
local max_pending = tonumber(ARGV[3])
local margin = tonumber(ARGV[4])
local nrules = tonumber(ARGV[5])
local arg = 6 -- the next ARGV to read
local rulesets = {}
for k = 1, nrules do
  local r = {gap = tonumber(ARGV[arg]), horizon = tonumber(ARGV[arg + 1]), count = tonumber(ARGV[arg + 2]), n = {}, w = {}}
  arg = arg + 3
  for i = 1, r.count do
    r.n[i], r.w[i] = tonumber(ARGV[arg]), tonumber(ARGV[arg + 1])
    arg = arg + 2
  end
  rulesets[k] = r
end
local L = lib()

-- reserve books one request: trim its home set, give an existing member its
-- slot back, refuse a collapsed member, take out the held booking with
-- the same collapse key (put back if this request books nothing), check
-- the cap, seek the slot, refuse it after not-after, record it.
local function reserve(sets, ckey, member, not_after, not_before, category, collapse_key, qs, qe)
  -- Only the home set must be trimmed before it is read: an existing
  -- member is looked for there. Entries older than a set's horizon change
  -- no decision (every read is by score range, or by rank among the
  -- newest), so a second set is trimmed when written, on about one call
  -- in eight (now's millisecond a multiple of 8): that bounds its size at
  -- a fraction of the cost.
  local home = sets[1].key
  redis.call('ZREMRANGEBYSCORE', home, '-inf', now - sets[1].r.horizon)
  local s = redis.call('ZSCORE', home, member)
  if s then
    return {tonumber(s), 1, now, '', ''}
  end
  local old, old_at = nil, nil
  if ckey then
    if redis.call('HEXISTS', ckey, 'x:' .. member) == 1 then
      return {now, 0, now, 'collapsed', ''}
    end
    local o = redis.call('HGET', ckey, 'k:' .. category .. ':' .. collapse_key)
    if o and o ~= member then
      local at = redis.call('ZSCORE', home, o)
      if at and tonumber(at) > now + margin then
        old, old_at = o, tonumber(at)
        for b = 1, #sets do
          redis.call('ZREM', sets[b].key, old)
        end
      end
    end
  end
  local function put_back()
    if old then
      for b = 1, #sets do
        redis.call('ZADD', sets[b].key, old_at, old)
      end
    end
  end
  if max_pending > 0 then
    for b = 1, #sets do
      if redis.call('ZCOUNT', sets[b].key, '(' .. now, '+inf') >= max_pending then
        local first = redis.call('ZRANGEBYSCORE', sets[b].key, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
        put_back()
        return {tonumber(first[2]), 0, now, 'full', ''}
      end
    end
  end
  local t = now
  if not_before and not_before > t then t = not_before end
  -- Only the home set's newest entry is read: a second set's entries are
  -- among the home (global) set's, so it has none after now when the home
  -- set has none; its own newest entry is read only for its gap.
  local e = redis.call('ZREVRANGE', sets[1].key, 0, 0, 'WITHSCORES')
  local last = e[2] and tonumber(e[2])
  local future = last and last > now
  if not future then
    -- Every rule's feasible instants are a ray: the latest start wins. A
    -- second set's entries within its horizon are among the home set's,
    -- so a count of the home set bounds the second set's count in any
    -- window no longer than the home set's: when it is under the rule's
    -- N, the rule cannot deny and its ZCOUNT is skipped; likewise its gap
    -- when the home set's newest entry is a gap away already.
    local hw, hc = {}, {} -- the home set's windows and counts
    for b = 1, #sets do
      local key, r = sets[b].key, sets[b].r
      for i = 1, r.count do
        local n, w = r.n[i], r.w[i]
        local c
        if b > 1 then
          for j = 1, #hw do
            if hw[j] >= w and (c == nil or hc[j] < c) then c = hc[j] end
          end
        end
        if c == nil or c >= n then
          c = redis.call('ZCOUNT', key, '(' .. (now - w), '+inf')
          if b == 1 then hw[#hw + 1], hc[#hc + 1] = w, c end
          if c >= n then
            local en = redis.call('ZREVRANGE', key, n - 1, n - 1, 'WITHSCORES')
            local ti = tonumber(en[2]) + w
            if ti > t then t = ti end
          end
        end
      end
      if r.gap > 0 and last and last + r.gap > t then
        local lb = last
        if b > 1 then
          -- (Not "lb = eb[2] and ...": gopher-lua, miniredis's Lua, keeps
          -- lb's old value when that expression is nil.)
          local eb = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
          lb = nil
          if eb[2] then lb = tonumber(eb[2]) end
        end
        if lb and lb + r.gap > t then t = lb + r.gap end
      end
    end
    for k = 1, #qs do
      if qs[k] <= t and t < qe[k] then t = qe[k] end
    end
  else
    local bounds = {}
    for b = 1, #sets do
      bounds[b] = {ts = L.entries(sets[b].key, now, sets[b].r), r = sets[b].r}
    end
    t = L.sweep(bounds, t, qs, qe, nil)
  end
  if not_after and t > not_after then
    put_back()
    return {t, 0, now, 'late', ''}
  end
  -- Each set lives until its newest entry (at most the home set's newest,
  -- or t) has aged out of its horizon.
  local newest = t
  if last and last > newest then newest = last end
  local ttl = minttl
  for b = 1, #sets do
    if b > 1 and now % 8 == 0 then
      redis.call('ZREMRANGEBYSCORE', sets[b].key, '-inf', now - sets[b].r.horizon)
    end
    redis.call('ZADD', sets[b].key, t, member)
    local kt = newest - now + sets[b].r.horizon
    if kt < minttl then kt = minttl end
    redis.call('PEXPIRE', sets[b].key, kt)
    if kt > ttl then ttl = kt end
  end
  if ckey then
    redis.call('HSET', ckey, 'k:' .. category .. ':' .. collapse_key, member)
    if old then
      redis.call('HSET', ckey, 'x:' .. old, member)
    end
    if redis.call('PTTL', ckey) < ttl then
      redis.call('PEXPIRE', ckey, ttl)
    end
  end
  return {t, 0, now, '', old or ''}
end

local out = {}
local key = 1 -- the next KEYS to read
while arg <= #ARGV do
  local member, not_after, not_before = ARGV[arg], tonumber(ARGV[arg + 1]), tonumber(ARGV[arg + 2])
  local category, collapse_key, nsets = ARGV[arg + 3], ARGV[arg + 4], tonumber(ARGV[arg + 5])
  arg = arg + 6
  local sets = {}
  for b = 1, nsets do
    sets[b] = {key = KEYS[key], r = rulesets[tonumber(ARGV[arg])]}
    key, arg = key + 1, arg + 1
  end
  local ckey
  if collapse_key ~= '' then
    ckey, key = KEYS[key], key + 1
  end
  local nquiet = tonumber(ARGV[arg])
  arg = arg + 1
  local qs, qe = {}, {}
  for k = 1, nquiet do
    qs[k], qe[k] = tonumber(ARGV[arg]), tonumber(ARGV[arg + 1])
    arg = arg + 2
  end
  local ok, reply = pcall(reserve, sets, ckey, member, not_after, not_before, category, collapse_key, qs, qe)
  if ok then
    out[#out + 1] = reply
  else
    out[#out + 1] = error_reply(reply)
  end
end
return out
