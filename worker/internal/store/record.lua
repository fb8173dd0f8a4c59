-- record.lua: the one writer of recipients' outcomes (store.write): one
-- chunk's, or one delivery's, in one call: each settled recipient's final
-- state once, with its count, the recipients left held to their delivery
-- tasks (so a cancellation can wake them), and the deferrals. Go side: recordArgs in store.go builds ARGV in
-- this order.
--
-- Device outcomes are recorded as their providers answer (store_outcomes.go,
-- recorder.write), before this call, with one exception: the one device of
-- a chunk of one recipient with one device (a single-recipient job's usual
-- shape), whose answer is its recipient's last event. Its state comes here
-- (dev_field, dev_state) and is written by this call, within the same
-- linger and round trip as its own write would have been, unless this call
-- retires the job (which deletes the device states): such a job then never
-- creates its device-state hash.
--
-- KEYS[1] job record hash   hush:job:{<id>}
-- KEYS[2] recipient states  hush:job:{<id>}:r
-- KEYS[3] device states     hush:job:{<id>}:dev  (deleted when the job retires)
-- KEYS[4] done bucket       hush:done:{<tag>}:<width>:<bucket>  (store_retire.go)
-- KEYS[5] exceptions        hush:job:{<id>}:x    (exceptKey: kept after
--                           the job retires)
--
-- ARGV[1] ttl        TTL of the keys in milliseconds
-- ARGV[2] deferrals  deferrals to add to the job's count
-- ARGV[3] expire_at  when the done bucket expires (Unix ms)
-- ARGV[4] dev_field  a device state to write ("<i>/<d>"), or "" for none
-- ARGV[5] dev_state  its state
-- ARGV[6] range      the recipients' range (recipient / 100, every one of
--                    this call's in it), or "" for none: see below
-- ARGV[7..] per recipient, 2 values each: recipient, state
--           (its final state, followed by '|' and the reason for a
--           failure, or '@' followed by the queue its delivery task waits
--           on for a held recipient: field "h:<recipient>" of the job
--           record; no final state starts with '@')
--
-- Reply: per recipient, 1 when this call recorded its final state, else 0
-- (it already had one, or it is held, or the job was retired: its record
-- is gone and nothing is written). When the last final state is recorded
-- the job retires (retire.lua): a call that finishes the job writes only
-- its done entry, not the states its records lose at once.
local ttl = ARGV[1]
local deferrals = tonumber(ARGV[2])
local expire_at = ARGV[3]
local dev_field = ARGV[4]
local dev_state = ARGV[5]
local range = ARGV[6]
local HELD = 64 -- '@': a held recipient's ARGV value starts with it

-- write_device writes the folded device state, as recorder.write would
-- have: the device-state hash gets the TTL the job's keys get.
local function write_device()
  if dev_field ~= '' then
    redis.call('HSET', KEYS[3], dev_field, dev_state)
    redis.call('PEXPIRE', KEYS[3], ttl)
  end
end

-- The record as retire() reads it; none of its fields is there when it is
-- gone (retired, or its TTL ran out). With a range, two more fields
-- follow: h[RANGED] 'ranged' and h[RANGED + 1] 'f:<range>' (below).
local RANGED = #retire_fields + 1
local fields = retire_fields
if range ~= '' then
  fields = {unpack(retire_fields)}
  fields[#fields + 1] = 'ranged'
  fields[#fields + 1] = 'f:' .. range
end
local h = redis.call('HMGET', KEYS[1], unpack(fields))
local out = {}
local exists = false
for i = 1, #retire_fields do
  if h[i] then
    exists = true
    break
  end
end
if not exists then
  -- Written all the same, as recorder.write writes whatever the record's
  -- fate: a device that has the push is never sent to again.
  write_device()
  for _ = 7, #ARGV - 1, 2 do
    out[#out + 1] = 0
  end
  return out
end

-- A final state is only ever written with its count, in one call, so a
-- record that counts none has no recipient with one: the read is skipped
-- (a single-recipient job's only record call).
--
-- Nor is it made when no recipient of the call's range can have one. A
-- call given a range counts the final states it writes twice more: in
-- 'ranged' (all such calls') and in 'f:<range>' (that range's). Every
-- other call (one without a range, or a process of a build before ranges)
-- counts them only under their states. So while 'ranged' equals the count
-- of every final state, and 'f:<range>' is 0, no recipient of the range
-- has a final state. (A chunk run makes one record call; a call that
-- reached Redis but whose reply was lost, sent again, finds its own
-- range's count.)
local counted = 0
for x = FIRST_FINAL, LAST_FINAL do
  counted = counted + (tonumber(h[x]) or 0)
end
local fresh = range ~= '' and (tonumber(h[RANGED]) or 0) == counted and (tonumber(h[RANGED + 1]) or 0) == 0

-- Which recipients already have a final state: the others get theirs now.
local had = {}
if counted > 0 and not fresh then
  local names = {}
  for i = 7, #ARGV - 1, 2 do
    if string.byte(ARGV[i + 1]) ~= HELD then
      names[#names + 1] = ARGV[i]
    end
  end
  if #names > 0 then
    had = redis.call('HMGET', KEYS[2], unpack(names))
  end
end

-- One walk over the entries builds the reply, the writes (one call per
-- kind for the whole chunk: the held markers, the new final states, their
-- counts per state, the markers they replace) and view: h as it will be
-- after those writes, so that the call that finishes the job retires it
-- without writing them first.
local holds, finals, gone, counts, states, exceptions = {}, {}, {}, {}, {}, {}
local seen, changed, k = {}, deferrals > 0, 0
local view = h
for i = 7, #ARGV - 1, 2 do
  local recipient, state = ARGV[i], ARGV[i + 1]
  local kept = state -- what the exceptions keep: the state and its reason
  local bar = string.find(state, '|', 1, true)
  if bar then
    state = string.sub(state, 1, bar - 1)
  end
  local new = 0
  if string.byte(state) == HELD then
    changed = true
    holds[#holds + 1] = 'h:' .. recipient
    holds[#holds + 1] = string.sub(state, 2)
  else
    k = k + 1
    if not had[k] and not seen[recipient] then
      seen[recipient] = true
      new = 1
      changed = true
      finals[#finals + 1] = recipient
      finals[#finals + 1] = state
      if state ~= 'delivered' then
        exceptions[#exceptions + 1] = recipient
        exceptions[#exceptions + 1] = kept
      end
      gone[#gone + 1] = 'h:' .. recipient
      local c = counts[state]
      if not c then
        states[#states + 1] = state
        c = 0
      end
      counts[state] = c + 1
      local x = final_index[state]
      if x then
        view[x] = (tonumber(view[x]) or 0) + 1
      end
    end
  end
  out[#out + 1] = new
end
if deferrals > 0 then
  view[DEFERRALS] = (tonumber(view[DEFERRALS]) or 0) + deferrals
end
-- The exceptions are written before the job may retire: they outlive it.
if #exceptions > 0 then
  redis.call('HSET', KEYS[5], unpack(exceptions))
end
if changed and retire_with(view, KEYS[1], KEYS[2], KEYS[3], KEYS[4], expire_at, KEYS[5]) == 1 then
  return out
end
write_device()
if not changed then
  return out
end

if #holds > 0 then
  redis.call('HSET', KEYS[1], unpack(holds))
end
if #finals > 0 then
  redis.call('HSET', KEYS[2], unpack(finals))
  for _, state in ipairs(states) do
    redis.call('HINCRBY', KEYS[1], state, counts[state])
  end
  if range ~= '' then
    redis.call('HINCRBY', KEYS[1], 'ranged', #finals / 2)
    redis.call('HINCRBY', KEYS[1], 'f:' .. range, #finals / 2)
  end
  redis.call('HDEL', KEYS[1], unpack(gone))
end
if deferrals > 0 then
  redis.call('HINCRBY', KEYS[1], 'deferrals', deferrals)
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
if #exceptions > 0 then
  redis.call('PEXPIRE', KEYS[5], ttl)
end
return out
