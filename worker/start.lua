-- start.lua: a job task's first step: write the job record's fixed fields
-- unless they are there, move its state when this submission owns the id,
-- read the fan-out cursor and the states of the recipients the job task
-- delivers itself. Go side: startArgs in store.go builds ARGV in this order.
--
-- KEYS[1] job record hash   hush:job:{<id>}
-- KEYS[2] recipient states  hush:job:{<id>}:r    (read when nread > 0)
-- KEYS[3] device states     hush:job:{<id>}:dev  (read when nread > 0)
--
-- ARGV[1] queue        the queue submitting the job (claims the id when the
--                      record has none)
-- ARGV[2] accepted_at  RFC 3339
-- ARGV[3] recipients   how many recipients the job has
-- ARGV[4] deadline     RFC 3339, "" for none
-- ARGV[5] state        the record's state when this submission owns the id
-- ARGV[6] ttl          TTL of the record in milliseconds
-- ARGV[7] nread        how many recipients' states to read, from index 0
--                      (the chunk the job task delivers itself)
-- ARGV[8..] per recipient read, 1 value each: devices
--
-- Reply: {queue that owns the id, cursor or "", cancelled_at or "" (the
-- job was cancelled), then nread final states,
-- then per recipient in order its device states and its attempt fields
-- "<i>/a", "<i>/f", "<i>/t", "<i>/p" (false when none; see
-- appendRecipientFields)}.
--
-- The fixed fields are only ever written together (here, or in one MULTI
-- by the client that accepted the job), so a record with a queue has them
-- all and the usual case (the client wrote the record) costs one read.
local queue = ARGV[1]
local accepted_at = ARGV[2]
local recipients = ARGV[3]
local deadline = ARGV[4]
local state = ARGV[5]
local ttl = ARGV[6]
local nread = tonumber(ARGV[7])
local devices = {} -- devices[i + 1]: recipient i's device count
for i = 1, nread do
  devices[i] = tonumber(ARGV[7 + i])
end

local head = redis.call('HMGET', KEYS[1], 'queue', 'cursor', 'cancelled_at')
local owner = head[1]
if not owner then
  redis.call('HSETNX', KEYS[1], 'queue', queue)
  redis.call('HSETNX', KEYS[1], 'accepted_at', accepted_at)
  redis.call('HSETNX', KEYS[1], 'recipients', recipients)
  redis.call('HSETNX', KEYS[1], 'deadline', deadline)
  owner = queue
end
if owner == queue then
  redis.call('HSET', KEYS[1], 'state', state)
end
redis.call('PEXPIRE', KEYS[1], ttl)
local out = {owner, head[2] or '', head[3] or ''}
if nread == 0 then
  return out
end
local fields = {}
for i = 0, nread - 1 do
  fields[#fields + 1] = tostring(i)
end
local finals = redis.call('HMGET', KEYS[2], unpack(fields))
for i = 1, nread do
  out[#out + 1] = finals[i]
end
fields = {}
for i = 0, nread - 1 do
  for d = 0, devices[i + 1] - 1 do
    fields[#fields + 1] = i .. '/' .. d
  end
  fields[#fields + 1] = i .. '/a'
  fields[#fields + 1] = i .. '/f'
  fields[#fields + 1] = i .. '/t'
  fields[#fields + 1] = i .. '/p'
end
if #fields > 0 then
  local devs = redis.call('HMGET', KEYS[3], unpack(fields))
  for i = 1, #fields do
    out[#out + 1] = devs[i]
  end
end
return out
