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
-- per recipient in order its device states and its attempt fields
-- "<i>/a", "<i>/f", "<i>/t" (false when none; see attemptFields)}.
--
-- The fixed fields are only ever written together (here, or in one MULTI
-- by the client that accepted the job), so a record with a queue has them
-- all and the usual case (the client wrote the record) costs one read.
local head = redis.call('HMGET', KEYS[1], 'queue', 'cursor')
local owner = head[1]
if not owner then
  redis.call('HSETNX', KEYS[1], 'queue', ARGV[1])
  redis.call('HSETNX', KEYS[1], 'accepted_at', ARGV[2])
  redis.call('HSETNX', KEYS[1], 'recipients', ARGV[3])
  redis.call('HSETNX', KEYS[1], 'deadline', ARGV[4])
  owner = ARGV[1]
end
if owner == ARGV[1] then
  redis.call('HSET', KEYS[1], 'state', ARGV[5])
end
redis.call('PEXPIRE', KEYS[1], ARGV[6])
local out = {owner, head[2] or ''}
local r = tonumber(ARGV[7])
if r == 0 then
  return out
end
local fields = {}
for i = 0, r - 1 do
  fields[#fields + 1] = tostring(i)
end
local finals = redis.call('HMGET', KEYS[2], unpack(fields))
for i = 1, r do
  out[#out + 1] = finals[i]
end
fields = {}
for i = 0, r - 1 do
  for d = 0, tonumber(ARGV[8 + i]) - 1 do
    fields[#fields + 1] = i .. '/' .. d
  end
  fields[#fields + 1] = i .. '/a'
  fields[#fields + 1] = i .. '/f'
  fields[#fields + 1] = i .. '/t'
end
if #fields > 0 then
  local devs = redis.call('HMGET', KEYS[3], unpack(fields))
  for i = 1, #fields do
    out[#out + 1] = devs[i]
  end
end
return out
