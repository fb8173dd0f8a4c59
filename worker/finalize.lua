-- finalize.lua: record a recipient's final state once and count it.
--
-- KEYS[1] job record hash   hush:job:{<id>}
-- KEYS[2] recipient states  hush:job:{<id>}:r
-- ARGV[1] recipient index
-- ARGV[2] final state (delivered, expired, token_invalid, failed)
-- ARGV[3] TTL of both keys in milliseconds
--
-- Reply: 1 when this call recorded the state, 0 when the recipient already
-- had one (the counters are left alone, so re-runs never count twice).
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then
  return 0
end
redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
