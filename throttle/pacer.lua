-- pacer.lua: Pacer.Pace, one request or many in one call (appended to
-- lib.lua). A pace key holds its theoretical arrival time (TAT), the
-- first instant not yet granted, as "<unix seconds>.<9-digit ns>"; an
-- absent key is free now. In order, each request for n sends starts at
-- start = max(TAT, now, not-before) and moves TAT to start + span, where
-- span = n * interval; a request with a latest start earlier than start
-- is held instead: it is told start and moves nothing. Go computes span in integer nanoseconds and splits
-- it into seconds and nanoseconds, so Lua only compares and adds integers
-- below 2^53: its doubles keep every time exact to the nanosecond and no
-- rounding accumulates (600/s stays 1,666,667 ns apart). Each key is read
-- once and written once per call, at the end.
--
-- KEYS     the pace keys the requests name, each once
-- ARGV[1]  now, "<s>.<ns>", or "" for Redis TIME
-- ARGV[2]  minttl (ms): the least TTL a written key gets
-- then     per request, in order: its key (index into KEYS), span seconds,
--          span nanoseconds (both 0 for no sends: the request reads and
--          writes nothing and starts at now), not-before ("<s>.<ns>" or ""),
--          latest start ("<s>.<ns>" or "": none)
-- Reply    {now s, now ns, then per request {start s, start ns}, or
--          {start s, start ns, 1} when held, or an
--          error reply when its key could not be read or written (e.g.
--          WRONGTYPE, a value that is no time), which stops no other key}
local NS = 1000000000

-- parse_time reads "<s>.<ns>"; nil for anything else.
local function parse_time(v)
  local s, ns = string.match(v, '^(%-?%d+)%.(%d%d%d%d%d%d%d%d%d)$')
  if not s then
    return nil
  end
  return tonumber(s), tonumber(ns)
end

-- after reports whether (as, ans) is later than (bs, bns).
local function after(as, ans, bs, bns)
  return as > bs or (as == bs and ans > bns)
end

local now_s, now_ns
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now_s, now_ns = tonumber(t[1]), tonumber(t[2]) * 1000
else
  now_s, now_ns = parse_time(ARGV[1])
end
local minttl = tonumber(ARGV[2])

-- state[k]: KEYS[k]'s TAT {s, ns}, false when absent or past, or
-- {err = ...} when it cannot be read; nil until first read.
local state = {}
local function tat(k)
  if state[k] ~= nil then
    return state[k]
  end
  local ok, v = pcall(redis.call, 'GET', KEYS[k])
  if not ok then
    state[k] = error_reply(v)
  elseif not v then
    state[k] = false
  else
    local s, ns = parse_time(v)
    if s then
      state[k] = {s, ns}
    else
      state[k] = {err = 'ERR pace key ' .. KEYS[k] .. ' holds no time: ' .. string.format('%q', string.sub(v, 1, 40))}
    end
  end
  return state[k]
end

local out = {now_s, now_ns}
local written = {} -- key index -> the indexes in out of its requests
local order = {}   -- key indexes in the order first written
local arg = 3
while arg <= #ARGV do
  local k, span_s, span_ns = tonumber(ARGV[arg]), tonumber(ARGV[arg + 1]), tonumber(ARGV[arg + 2])
  local not_before, latest = ARGV[arg + 3], ARGV[arg + 4]
  arg = arg + 5
  if span_s == 0 and span_ns == 0 then
    out[#out + 1] = {now_s, now_ns}
  else
    local t = tat(k)
    if t and t.err then
      out[#out + 1] = t
    else
      local s, ns = now_s, now_ns
      if t and after(t[1], t[2], s, ns) then
        s, ns = t[1], t[2]
      end
      if not_before ~= '' then
        local bs, bns = parse_time(not_before)
        if after(bs, bns, s, ns) then
          s, ns = bs, bns
        end
      end
      local held = false
      if latest ~= '' then
        local ls, lns = parse_time(latest)
        held = after(s, ns, ls, lns)
      end
      if held then
        out[#out + 1] = {s, ns, 1}
      else
        out[#out + 1] = {s, ns}
        s, ns = s + span_s, ns + span_ns
        if ns >= NS then
          s, ns = s + 1, ns - NS
        end
        state[k] = {s, ns}
        if not written[k] then
          written[k] = {}
          order[#order + 1] = k
        end
        local w = written[k]
        w[#w + 1] = #out
      end
    end
  end
end

-- The key may go a second after its TAT (to the next ms): it is free then.
for _, k in ipairs(order) do
  local t = state[k]
  local ttl = (t[1] - now_s) * 1000 + math.ceil((t[2] - now_ns) / 1000000) + 1000
  if ttl < minttl then
    ttl = minttl
  end
  local ok, e = pcall(redis.call, 'SET', KEYS[k], string.format('%d.%09d', t[1], t[2]), 'PX', ttl)
  if not ok then
    local r = error_reply(e)
    for _, i in ipairs(written[k]) do
      out[i] = r
    end
  end
end
return out
