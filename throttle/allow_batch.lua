-- allow_batch.lua: Allow for many users in one script call, on servers
-- where one script may touch keys of any slot (not Redis Cluster).
-- Appended to lib.lua and allow.lua: every user gets exactly allow()'s
-- decision, in KEYS order (a user may repeat), all at the same now (TIME is
-- read once).
--
-- KEYS     the users' sorted sets
-- ARGV     now (ms, or "" for Redis TIME), minttl (ms), member 1 ..
--          member #KEYS, gap, horizon, N1, W1, N2, W2, ...
-- Reply    per key, allow()'s array, or an error reply when that user's
--          calls failed (e.g. WRONGTYPE): one user's failure does not stop
--          the others.
local nkeys = #KEYS
local now = now_ms(ARGV[1])
local minttl = tonumber(ARGV[2])
local members = 3 -- key i's member is ARGV[members + i - 1]
local r = read_rules(ARGV, members + nkeys)
local out = {}
for i = 1, nkeys do
  local ok, reply = pcall(allow, KEYS[i], now, 'allow', ARGV[members + i - 1], minttl, r)
  if ok then
    out[i] = reply
  else
    out[i] = error_reply(reply)
  end
end
return out
