-- reserve_batch.lua: Reserve for many requests in one script call, on
-- servers where one script may touch keys of any slot (not Redis Cluster).
-- Appended to lib.lua and reserve.lua: every request gets exactly
-- reserve()'s booking, in KEYS order (a user may repeat), all at the same
-- now (TIME is read once).
--
-- KEYS     the users' sorted sets
-- ARGV     now (ms, or "" for Redis TIME), minttl (ms), member 1 ..
--          member #KEYS, gap, horizon, N1, W1, N2, W2, ...
-- Reply    per key, reserve()'s array, or an error reply when that
--          request's calls failed (e.g. WRONGTYPE).
local nkeys = #KEYS
local L = lib()
local now, minttl = now_ms(ARGV[1]), tonumber(ARGV[2])
local r = read_rules(ARGV, 3 + nkeys)
local out = {}
for i = 1, nkeys do
  local ok, reply = pcall(reserve, L, KEYS[i], now, ARGV[2 + i], minttl, r)
  if ok then
    out[i] = reply
  else
    out[i] = error_reply(reply)
  end
end
return out
