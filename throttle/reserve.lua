-- reserve.lua: reserve(L, key, now, member, minttl, r) books the earliest
-- instant at which the user may act, under an idempotency member: a member
-- already booked gets its slot back. Shared by reserve_one.lua (Reserve) and
-- reserve_batch.lua (ReserveBatch). L is lib(), r a policy from read_rules.
--
-- Returns  {slot ms, existing 0|1, now ms}
local function reserve(L, key, now, member, minttl, r)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - r.horizon)
  local s = redis.call('ZSCORE', key, member)
  if s then
    return {tonumber(s), 1, now}
  end
  local t, _, _, last = L.decide(key, now, r, false)
  L.record(key, now, r, t, member, last, minttl)
  return {t, 0, now}
end
