-- start.lua: a job task's first step, and the accepting client's write of
-- the job record: write the job record's fixed fields unless they are
-- there, move its state when this submission owns the id, read the fan-out
-- cursor and the states of the recipients the job task delivers itself.
-- A job already retired (finished: its records replaced by a done-hash
-- entry, store_retire.go) is left as it is. Go side: startArgs in store.go builds
-- ARGV in this order.
--
-- KEYS[1] job record hash   hush:job:{<id>}
-- KEYS[2] recipient states  hush:job:{<id>}:r    (read when nread > 0)
-- KEYS[3] device states     hush:job:{<id>}:dev  (read when nread > 0)
-- KEYS[4] done bucket       hush:done:{<tag>}:<width>:<bucket>  (the oldest a reader looks in)
-- KEYS[5] done bucket       hush:done:{<tag>}:<width>:<bucket>
-- KEYS[6] done bucket       hush:done:{<tag>}:<width>:<bucket>
-- KEYS[7] done bucket       hush:done:{<tag>}:<width>:<bucket>
-- KEYS[8] done bucket       hush:done:{<tag>}:<width>:<bucket>  (the current one)
-- KEYS[9] done bucket       hush:done:{<tag>}:<width>:<bucket>  (the next one)
--
-- ARGV[1] queue        the queue submitting the job (claims the id when the
--                      record has none)
-- ARGV[2] task         the batch task carrying the job ("" for the job's own
--                      task): a job in a batch is owned by that batch's task
--                      alone, so that two batches carrying one id (a client
--                      retrying a batch) never run it side by side
-- ARGV[3] accepted_at  RFC 3339
-- ARGV[4] recipients   how many recipients the job has
-- ARGV[5] deadline     RFC 3339, "" for none
-- ARGV[6] state        the record's state when this submission owns the id
-- ARGV[7] keep         "1": set state only when the record has none (the
--                      accepting client, which may write after the job
--                      task started)
-- ARGV[8] ttl          TTL of the record in milliseconds (set when this call
--                      writes the record, or near the floor: see below)
-- ARGV[9] nread        how many recipients' states to read, from index 0
--                      (the chunk the job task delivers itself)
-- ARGV[10] app         the job's app, "" for none (written with the fixed
--                      fields when it is set)
-- ARGV[11..] per recipient read, 1 value each: devices
--
-- Reply: {owner of the id (its queue, then "@" and its batch task when a
-- batch owns it), cursor or "", cancelled_at or "" (the
-- job was cancelled), "1" when the job was retired (then only its
-- accepted_at follows, in Unix ms as its done entry keeps it, and the
-- owner is its queue, then "@" and its batch task's tag when a batch owned
-- it, and the cursor its recipient count) else "", "1" when the job's task
-- had not run before (the record had no state, or queued: nothing of the
-- job was sent, and its chunk tasks may skip their reads, chunk.lua) else
-- "", then nread final
-- states, then their nread held markers ("h:<i>" in the job record: the
-- task owning a held recipient, held.go), then per recipient in order its
-- device states and its attempt
-- fields "<i>/a", "<i>/f", "<i>/t", "<i>/p", "<i>/r", "<i>/w" (false when none; see
-- appendRecipientFields)}.
--
-- The fixed fields are only ever written together, here, so a record with
-- a queue has them all and the usual case (the client wrote the record)
-- costs one read.
local queue = ARGV[1]
local task = ARGV[2]
local accepted_at = ARGV[3]
local recipients = ARGV[4]
local deadline = ARGV[5]
local state = ARGV[6]
local keep = ARGV[7]
local ttl = ARGV[8]
local nread = tonumber(ARGV[9])
local app = ARGV[10]
local devices = {} -- devices[i + 1]: recipient i's device count
for i = 1, nread do
  devices[i] = tonumber(ARGV[10 + i])
end

local head = redis.call('HMGET', KEYS[1], 'queue', 'cursor', 'cancelled_at', 'state', 'task')
local owner = head[1]
local owning = head[5] or ''
local found = owner -- false when missing (Redis gives Lua false for a nil reply)
if not owner then
  local id = string.sub(KEYS[1], 11, -2)
  for k = 4, 9 do
    local done = redis.call('HGET', KEYS[k], id)
    if done then
      local q, at, n = string.match(done, '^([^|]*)|([^|]*)|([^|]*)|')
      return {q, n, '', '1', at}
    end
  end
  -- No fixed field is there (they are written together), so one HSET
  -- writes them all, with the state this submission sets.
  local fixed = {'queue', queue, 'accepted_at', accepted_at, 'recipients', recipients, 'deadline', deadline}
  if task ~= '' then
    fixed[#fixed + 1] = 'task'
    fixed[#fixed + 1] = task
  end
  if app ~= '' then
    fixed[#fixed + 1] = 'app'
    fixed[#fixed + 1] = app
  end
  if keep ~= '1' or not head[4] then
    fixed[#fixed + 1] = 'state'
    fixed[#fixed + 1] = state
  end
  redis.call('HSET', KEYS[1], unpack(fixed))
  owner = queue
  owning = task
elseif owner == queue and owning == task and (keep ~= '1' or not head[4]) then
  redis.call('HSET', KEYS[1], 'state', state)
end
if owning ~= '' then
  owner = owner .. '@' .. owning
end
-- Every writer of a job's records gives them a TTL ending at one instant,
-- the job's retention from its acceptance or a day after its deadline
-- (ttlFor), so a record found here already expires then: only a TTL near
-- ttlFor's one-minute floor (a job at the end of its retention, or one
-- the floor already kept) is set again.
if not found or tonumber(ttl) <= 120000 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
-- A job whose task has not run yet (no state, or queued) has sent
-- nothing: no recipient or device has a state to read.
local fresh = not head[4] or head[4] == 'queued'
-- A recipient's attempt fields, after its device states (the Go side's
-- appendRecipientFields).
local attempt_fields = {'/a', '/f', '/t', '/p', '/r', '/w'}
local out = {owner, head[2] or '', head[3] or '', '', fresh and '1' or ''}
if nread == 0 then
  return out
end
if fresh then
  -- Nothing to read: every final state, held marker, device state and
  -- attempt field is false, and naming them would cost more than the
  -- reply (a single-recipient job's usual case).
  local n = 2 * nread
  for i = 1, nread do
    n = n + devices[i] + #attempt_fields
  end
  for x = 6, 5 + n do
    out[x] = false
  end
  return out
end
local fields = {}
for i = 0, nread - 1 do
  fields[#fields + 1] = tostring(i)
end
local finals = redis.call('HMGET', KEYS[2], unpack(fields))
for i = 1, nread do
  out[#out + 1] = finals[i] or false
end
local holds = {}
for i = 1, nread do
  holds[i] = 'h:' .. fields[i]
end
holds = redis.call('HMGET', KEYS[1], unpack(holds))
for i = 1, nread do
  out[#out + 1] = holds[i] or false
end
fields = {}
for i = 0, nread - 1 do
  for d = 0, devices[i + 1] - 1 do
    fields[#fields + 1] = i .. '/' .. d
  end
  for _, f in ipairs(attempt_fields) do
    fields[#fields + 1] = i .. f
  end
end
if #fields > 0 then
  local devs = redis.call('HMGET', KEYS[3], unpack(fields))
  for i = 1, #fields do
    out[#out + 1] = devs[i] or false
  end
end
return out
