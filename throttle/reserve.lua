-- reserve.lua: reserve(L, key, now, member, not_after, max_pending, minttl, r)
-- books the earliest instant at which the user may act, under an
-- idempotency member: a member already booked gets its slot back, whatever
-- the cap and not_after say. Shared by reserve_one.lua (Reserve) and
-- reserve_batch.lua (ReserveBatch). L is lib(), r a policy from read_rules.
--
-- A new member books nothing when
--   max_pending > 0 and the user already holds that many entries after now
--     ('full'), checked with one ZCOUNT before any sweep, so a refusal
--     costs O(log n) however many bookings there are;
--   not_after (ms, nil for none) is before its earliest slot ('late').
--
-- Returns  {slot ms, existing 0|1, now ms, refused}: refused is '' when
--          the member holds the slot, 'full' with slot = the user's
--          earliest entry after now, 'late' with slot = the slot it would
--          have booked.
local function reserve(L, key, now, member, not_after, max_pending, minttl, r)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - r.horizon)
  local s = redis.call('ZSCORE', key, member)
  if s then
    return {tonumber(s), 1, now, ''}
  end
  if max_pending > 0 and redis.call('ZCOUNT', key, '(' .. now, '+inf') >= max_pending then
    local first = redis.call('ZRANGEBYSCORE', key, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    return {tonumber(first[2]), 0, now, 'full'}
  end
  local t, _, _, last = L.decide(key, now, r, false)
  if not_after and t > not_after then
    return {t, 0, now, 'late'}
  end
  L.record(key, now, r, t, member, last, minttl)
  return {t, 0, now, ''}
end
