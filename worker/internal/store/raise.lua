-- raise.lua: raises one shard of the reset mark (resetmark.go) to an
-- instant; it never lowers it. A key holding anything else (another type,
-- or not a number) is overwritten: a spoiled mark does not keep resets
-- failing.
--
-- KEYS[1] reset mark  hush:throttle-reset:{<n>}
--
-- ARGV[1] at  Unix ms on the limiter's clock
--
-- Reply: 0.
local at = ARGV[1]
local g = redis.pcall('GET', KEYS[1])
local v = type(g) == 'string' and tonumber(g) or 0
if tonumber(at) > v then redis.call('SET', KEYS[1], at) end
return 0
