-- record.lua: record one chunk's outcomes in one call: each settled
-- recipient's final state once (counted like finalize.lua), the recipients
-- left held to their delivery tasks (so a cancellation can wake them), and
-- the chunk's deferrals. Go side: recordArgs in store.go builds ARGV in
-- this order.
--
-- Device outcomes are not recorded here: outcomes.go records each device's
-- state as its provider answers (recorder.write), before this call.
--
-- KEYS[1] job record hash   hush:job:{<id>}
-- KEYS[2] recipient states  hush:job:{<id>}:r
-- KEYS[3] device states     hush:job:{<id>}:dev  (deleted when the job retires)
-- KEYS[4] done bucket       hush:done:{<tag>}:<width>:<bucket>  (retire.go)
--
-- ARGV[1] ttl        TTL of the keys in milliseconds
-- ARGV[2] deferrals  deferrals to add to the job's count
-- ARGV[3] expire_at  when the done bucket expires (Unix ms)
-- ARGV[4..] per recipient, 3 values each: recipient, state, queue
--           (a final state, or "" for a held recipient whose task waits on
--           queue: field "h:<recipient>" of the job record)
--
-- Reply: per recipient, 1 when this call recorded its final state, else 0
-- (it already had one, or it is held, or the job was retired: its record
-- is gone and nothing is written). When the last final state is recorded
-- the job retires (retire.lua).
local ttl = ARGV[1]
local deferrals = tonumber(ARGV[2])
local expire_at = ARGV[3]

local out = {}
if redis.call('EXISTS', KEYS[1]) == 0 then
  for _ = 4, #ARGV - 2, 3 do
    out[#out + 1] = 0
  end
  return out
end
local counted = false
for i = 4, #ARGV - 2, 3 do
  local recipient, state, queue = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if state == '' then
    redis.call('HSET', KEYS[1], 'h:' .. recipient, queue)
    out[#out + 1] = 0
    counted = true
  elseif redis.call('HSETNX', KEYS[2], recipient, state) == 1 then
    redis.call('HINCRBY', KEYS[1], state, 1)
    redis.call('HDEL', KEYS[1], 'h:' .. recipient)
    out[#out + 1] = 1
    counted = true
  else
    out[#out + 1] = 0
  end
end
if deferrals > 0 then
  redis.call('HINCRBY', KEYS[1], 'deferrals', deferrals)
  counted = true
end
-- A job that retires has its records deleted: only one that goes on has
-- their TTLs renewed.
if counted and retire(KEYS[1], KEYS[2], KEYS[3], KEYS[4], expire_at) == 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return out
