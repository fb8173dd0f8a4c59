-- chunk.lua: a chunk task's first step: mark the chunk started in its
-- job's record and, unless this is a hush:marked-chunk task's first run, read
-- its recipients' final states and its devices' states. Every run marks
-- before it sends, so a run that finds no mark knows nothing of the chunk
-- was sent by a run that marks; hush:marked-chunk tasks are only made by a
-- job's first run (start.lua answers fresh), so no run of a build that did
-- not mark (legacy.go) can have sent their chunk either. Their first run
-- reads nothing: a 1,000-recipient job's device hash holds up to 1,000
-- recipients' fields, and reading a chunk's 500 of them costs Redis more
-- than the rest of its first run. A hush:chunk task (made by a build that
-- did not mark, or by a job task's re-run) reads always.
-- A record that is gone (the job retired, or its TTL ran out) is left as
-- it is: no mark, nothing read. A hush:held task marks its runs the same
-- way: its first run knows its recipients are fresh and its own (held.go).
-- Every read also returns the recipients' held markers ("h:<i>" in the
-- job record: which task owns a held recipient). Go side: chunkArgs in
-- store_chunk.go builds ARGV in this order.
--
-- KEYS[1] job record hash   hush:job:{<id>}
-- KEYS[2] recipient states  hush:job:{<id>}:r
-- KEYS[3] device states     hush:job:{<id>}:dev
--
-- ARGV[1] mark    the chunk's field in the job record ("s:<from>", or
--                 "w:<from>:<wake>" for a hush:held task)
-- ARGV[2] always  "1": read on a first run too (a hush:chunk task)
-- ARGV[3] nread   how many of the fields below are recipients' (the rest
--                 are their devices' and attempt fields)
-- ARGV[4..] per field read, 1 value each: field
--
-- Reply: {queue or false (the record is gone), cancelled_at or false, 1
-- when nothing was read (then nothing follows) else 0, then the values of
-- the recipients' fields, then their held markers (one per recipient
-- field), then the values of the other fields, in order}.
local mark = ARGV[1]
local always = ARGV[2]
local nread = tonumber(ARGV[3])

local head = redis.call('HMGET', KEYS[1], 'queue', 'cancelled_at')
if not head[1] then
  return {false, head[2], 1}
end
if redis.call('HSETNX', KEYS[1], mark, '1') == 1 and always ~= '1' then
  return {head[1], head[2], 1}
end
local out = {head[1], head[2], 0}
if nread > 0 then
  local finals = redis.call('HMGET', KEYS[2], unpack(ARGV, 4, 3 + nread))
  local holds = {}
  for i = 1, nread do
    out[#out + 1] = finals[i]
    holds[i] = 'h:' .. ARGV[3 + i]
  end
  local marks = redis.call('HMGET', KEYS[1], unpack(holds))
  for i = 1, nread do
    out[#out + 1] = marks[i]
  end
end
if #ARGV > 3 + nread then
  local devs = redis.call('HMGET', KEYS[3], unpack(ARGV, 4 + nread))
  for i = 1, #ARGV - 3 - nread do
    out[#out + 1] = devs[i]
  end
end
return out
