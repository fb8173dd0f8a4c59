-- start.lua: a job task's first step: write the job record's fixed fields
-- unless they are there, move its state when this submission owns the id,
-- and read the fan-out cursor.
--
-- KEYS[1] job record hash  hush:job:{<id>}
-- ARGV[1] queue  ARGV[2] accepted_at  ARGV[3] recipients  ARGV[4] deadline
-- ARGV[5] state  ARGV[6] TTL in milliseconds
-- ARGV[7] R: how many recipients' states to read (the chunk the job task
-- delivers itself), then R device counts.
-- KEYS[2] recipient states  hush:job:{<id>}:r    (when R > 0)
-- KEYS[3] device states     hush:job:{<id>}:dev  (when R > 0)
--
-- Reply: {queue that owns the id, cursor or "", then R final states, then
-- every device state of those recipients in order (false when none)}.
redis.call('HSETNX', KEYS[1], 'queue', ARGV[1])
redis.call('HSETNX', KEYS[1], 'accepted_at', ARGV[2])
redis.call('HSETNX', KEYS[1], 'recipients', ARGV[3])
redis.call('HSETNX', KEYS[1], 'deadline', ARGV[4])
local owner = redis.call('HGET', KEYS[1], 'queue')
if owner == ARGV[1] then
  redis.call('HSET', KEYS[1], 'state', ARGV[5])
end
redis.call('PEXPIRE', KEYS[1], ARGV[6])
local out = {owner, redis.call('HGET', KEYS[1], 'cursor') or ''}
local r = tonumber(ARGV[7])
for i = 0, r - 1 do
  out[#out + 1] = redis.call('HGET', KEYS[2], tostring(i))
end
for i = 0, r - 1 do
  for d = 0, tonumber(ARGV[8 + i]) - 1 do
    out[#out + 1] = redis.call('HGET', KEYS[3], i .. '/' .. d)
  end
end
return out
