-- finalize.lua: record a recipient's final state once and count it; it is
-- no longer held.
-- Go side: finalizeArgs in store.go builds ARGV in this order.
--
-- KEYS[1] job record hash   hush:job:{<id>}
-- KEYS[2] recipient states  hush:job:{<id>}:r
-- KEYS[3] device states     hush:job:{<id>}:dev  (deleted when the job retires)
-- KEYS[4] done bucket       hush:done:{<tag>}:<width>:<bucket>  (retire.go)
--
-- ARGV[1] recipient  recipient index
-- ARGV[2] state      final state (one of FinalStates, store.go)
-- ARGV[3] ttl        TTL of both keys in milliseconds
-- ARGV[4] expire_at  when the done bucket expires (Unix ms)
--
-- Reply: 1 when this call recorded the state, 0 when the recipient already
-- had one (the counters are left alone, so re-runs never count twice) or
-- the job was retired (its record is gone). When the last final state is
-- recorded the job retires (retire.lua).
local recipient = ARGV[1]
local state = ARGV[2]
local ttl = ARGV[3]
local expire_at = ARGV[4]

if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HSETNX', KEYS[2], recipient, state) == 0 then
  return 0
end
redis.call('HINCRBY', KEYS[1], state, 1)
redis.call('HDEL', KEYS[1], 'h:' .. recipient)
-- A job that retires has its records deleted: only one that goes on has
-- their TTLs renewed.
if retire(KEYS[1], KEYS[2], KEYS[3], KEYS[4], expire_at) == 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return 1
