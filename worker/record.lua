-- record.lua: record one chunk's outcomes in one call: device states, then
-- each settled recipient's final state once (counted like finalize.lua), and
-- the chunk's deferrals.
--
-- KEYS[1] job record hash   hush:job:{<id>}
-- KEYS[2] recipient states  hush:job:{<id>}:r
-- KEYS[3] device states     hush:job:{<id>}:dev
-- ARGV[1] TTL of the keys in milliseconds
-- ARGV[2] D, the number of device pairs that follow ARGV[3]
-- ARGV[3] deferrals to add to the job's count
-- then D pairs "<recipient>/<device>", state (delivered | token_invalid),
-- then pairs recipient index, final state.
--
-- Reply: per recipient pair, 1 when this call recorded the state, 0 when
-- the recipient already had one.
local ttl = ARGV[1]
local nd = tonumber(ARGV[2])
local i = 4
for _ = 1, nd do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
  i = i + 2
end
if nd > 0 then
  redis.call('PEXPIRE', KEYS[3], ttl)
end
local out = {}
local counted = false
while i < #ARGV do
  if redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('HINCRBY', KEYS[1], ARGV[i + 1], 1)
    out[#out + 1] = 1
    counted = true
  else
    out[#out + 1] = 0
  end
  i = i + 2
end
if tonumber(ARGV[3]) > 0 then
  redis.call('HINCRBY', KEYS[1], 'deferrals', ARGV[3])
  counted = true
end
if counted then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return out
