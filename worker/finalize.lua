-- finalize.lua: record a recipient's final state once and count it; it is
-- no longer held.
-- Go side: finalizeArgs in store.go builds ARGV in this order.
--
-- KEYS[1] job record hash   hush:job:{<id>}
-- KEYS[2] recipient states  hush:job:{<id>}:r
--
-- ARGV[1] recipient  recipient index
-- ARGV[2] state      final state (delivered, expired, token_invalid, failed,
--                    throttle_full, collapsed, cancelled)
-- ARGV[3] ttl        TTL of both keys in milliseconds
--
-- Reply: 1 when this call recorded the state, 0 when the recipient already
-- had one (the counters are left alone, so re-runs never count twice).
local recipient = ARGV[1]
local state = ARGV[2]
local ttl = ARGV[3]

if redis.call('HSETNX', KEYS[2], recipient, state) == 0 then
  return 0
end
redis.call('HINCRBY', KEYS[1], state, 1)
redis.call('HDEL', KEYS[1], 'h:' .. recipient)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
