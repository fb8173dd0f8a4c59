-- record.lua: record one chunk's outcomes in one call: each settled
-- recipient's final state once (counted like finalize.lua), and the chunk's
-- deferrals. Go side: recordArgs in store.go builds ARGV in this order.
--
-- Device outcomes are not recorded here: outcomes.go records each device's
-- state as its provider answers (recorder.write), before this call.
--
-- KEYS[1] job record hash   hush:job:{<id>}
-- KEYS[2] recipient states  hush:job:{<id>}:r
--
-- ARGV[1] ttl        TTL of the keys in milliseconds
-- ARGV[2] deferrals  deferrals to add to the job's count
-- ARGV[3..] per settled recipient, 2 values each: recipient, state
--
-- Reply: per settled recipient, 1 when this call recorded its state, 0 when
-- the recipient already had one.
local ttl = ARGV[1]
local deferrals = tonumber(ARGV[2])

local out = {}
local counted = false
for i = 3, #ARGV - 1, 2 do
  local recipient, state = ARGV[i], ARGV[i + 1]
  if redis.call('HSETNX', KEYS[2], recipient, state) == 1 then
    redis.call('HINCRBY', KEYS[1], state, 1)
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
if counted then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return out
