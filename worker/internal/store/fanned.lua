-- fanned.lua: mark a job fanned out (every chunk task created) and retire
-- it when its recipients are already all final. Go side: fannedArgs in
-- store.go builds ARGV in this order.
--
-- KEYS[1] job record hash   hush:job:{<id>}
-- KEYS[2] recipient states  hush:job:{<id>}:r
-- KEYS[3] device states     hush:job:{<id>}:dev
-- KEYS[4] done bucket       hush:done:{<tag>}:<width>:<bucket>  (store_retire.go)
-- KEYS[5] exceptions        hush:job:{<id>}:x    (exceptKey)
--
-- ARGV[1] cursor     how many recipients have their chunk task
-- ARGV[2] expire_at  when the done bucket expires (Unix ms)
--
-- Reply: 1 when the job retired, else 0 (nothing is written when the job
-- was retired before: its record is gone).
local cursor = ARGV[1]
local expire_at = ARGV[2]

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'cursor', cursor, 'state', 'fanned_out')
return retire(KEYS[1], KEYS[2], KEYS[3], KEYS[4], expire_at, KEYS[5])
