-- cancel.lua: mark a job cancelled, once, and list its held deliveries.
-- Go side: cancelArgs in store.go builds ARGV in this order.
--
-- KEYS[1] job record hash   hush:job:{<id>}
--
-- ARGV[1] at  RFC 3339: when the job is cancelled (kept from the first call)
--
-- Reply: {} when the job is unknown; else {1 when this call cancelled it
-- (0 when an earlier one did), cancelled_at, the record's state (queued:
-- its job task has not run), then per held delivery its field
-- "h:<index>" and the queue its task waits on}.
local at = ARGV[1]

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {}
end
local first = redis.call('HSETNX', KEYS[1], 'cancelled_at', at)
local head = redis.call('HMGET', KEYS[1], 'cancelled_at', 'state')
local out = {first, head[1], head[2] or ''}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'h:' then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
return out
