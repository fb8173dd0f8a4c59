-- reserve_batch.lua: Reserve for many requests in one script call, on
-- servers where one script may touch keys of any slot (not Redis Cluster).
-- Appended to lib.lua and reserve.lua: every request gets exactly
-- reserve()'s booking, in KEYS order (a user may repeat), all at the same
-- now (TIME is read once).
--
-- KEYS     the users' sorted sets
-- ARGV     now (ms, or "" for Redis TIME), minttl (ms), max pending (0 for
--          no cap), then per key its member and not-after (ms, or "" for
--          none): member 1, not-after 1, ..., member #KEYS,
--          not-after #KEYS, then gap, horizon, N1, W1, N2, W2, ...
-- Reply    per key, reserve()'s array, or an error reply when that
--          request's calls failed (e.g. WRONGTYPE).
local nkeys = #KEYS
local now = now_ms(ARGV[1])
local minttl = tonumber(ARGV[2])
local max_pending = tonumber(ARGV[3])
local requests = 4 -- request i's member is ARGV[requests + 2(i-1)], its not-after the next
local r = read_rules(ARGV, requests + 2 * nkeys)
local L = lib()
local out = {}
for i = 1, nkeys do
  local at = requests + 2 * (i - 1)
  local ok, reply = pcall(reserve, L, KEYS[i], now, ARGV[at], tonumber(ARGV[at + 1]), max_pending, minttl, r)
  if ok then
    out[i] = reply
  else
    out[i] = error_reply(reply)
  end
end
return out
