-- retire.lua: defines retire(), which record.lua and fanned.lua call
-- after their writes (they are built as this file followed
-- by theirs). When the job is fanned out and every recipient has a final
-- state, retire() writes the job's compact status into a done hash and
-- deletes the job's records; store_retire.go explains the keys and
-- compactStatus reads the entry.

-- epoch_ms turns an RFC 3339 instant in UTC as the job record holds it
-- ("2026-11-23T23:32:34.123456789Z") into Unix milliseconds; "" for none.
-- Go writes it with a four-digit year, read here with one string.byte (a
-- string.match and its captures cost a retiring job about a microsecond
-- each); any other layout (a longer year) takes the pattern.
local function epoch_ms(s)
  if not s or s == '' then
    return ''
  end
  local y, mo, d, h, mi, sec
  local frac = 0
  local b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15, b16, b17, b18, b19, b20, f1, f2, f3 =
    string.byte(s, 1, 23)
  if b5 == 45 and b8 == 45 and b11 == 84 and b14 == 58 and b17 == 58 then
    y = ((b1 * 10 + b2) * 10 + b3) * 10 + b4 - 53328 -- 48 * 1111
    mo = b6 * 10 + b7 - 528
    d = b9 * 10 + b10 - 528
    h = b12 * 10 + b13 - 528
    mi = b15 * 10 + b16 - 528
    sec = b18 * 10 + b19 - 528
    -- the fraction's first three digits, as many as there are
    if b20 == 46 and f1 and f1 >= 48 and f1 <= 57 then
      frac = (f1 - 48) * 100
      if f2 and f2 >= 48 and f2 <= 57 then
        frac = frac + (f2 - 48) * 10
        if f3 and f3 >= 48 and f3 <= 57 then
          frac = frac + f3 - 48
        end
      end
    end
  else
    local f
    y, mo, d, h, mi, sec, f = string.match(s, '^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)%.?(%d*)')
    if not y then
      return ''
    end
    frac = tonumber(string.sub(f .. '000', 1, 3))
    y, mo, d, h, mi, sec = tonumber(y), tonumber(mo), tonumber(d), tonumber(h), tonumber(mi), tonumber(sec)
  end
  if mo <= 2 then
    y = y - 1
  end
  -- days from 1970-01-01 (Howard Hinnant's days_from_civil)
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((mo + 9) % 12) + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  local secs = ((days * 24 + h) * 60 + mi) * 60 + sec
  return string.format('%.0f', secs * 1000 + frac)
end

-- retire_fields are what retire reads of the job record, in the order
-- retire_with takes them: seven fixed fields, one counter per final state
-- in final_states' order (FIRST_FINAL to LAST_FINAL), then the task that
-- owns the job (TASK) and the job's app (APP). final_states is Go's list (FinalStates in store.go),
-- the line Go puts before this file (retireScriptSrc); final_index maps
-- each final state to its place.
local retire_fields = {'state', 'recipients', 'queue', 'accepted_at', 'deadline', 'cancelled_at', 'deferrals'}
local DEFERRALS = #retire_fields
local final_index = {}
for _, s in ipairs(final_states) do
  retire_fields[#retire_fields + 1] = s
  final_index[s] = #retire_fields
end
local FIRST_FINAL, LAST_FINAL = DEFERRALS + 1, #retire_fields
local DELIVERED = final_index['delivered']
retire_fields[#retire_fields + 1] = 'task'
local TASK = #retire_fields
retire_fields[#retire_fields + 1] = 'app'
local APP = #retire_fields

-- retire_with retires the job when h, the job record's retire_fields as
-- they are (or as the caller is about to write them), say it is fanned out
-- and every recipient has a final state. The other arguments and the
-- reply are retire's.
local function retire_with(h, job, recp, dev, into, expire_at, except)
  local n = tonumber(h[2])
  if h[1] ~= 'fanned_out' or not n then
    return 0
  end
  -- counts holds numbers: table.concat writes an integer count as %d
  -- would (string.format costs a call each).
  local counts, final, last, exceptional = {}, 0, 0, false
  for i = FIRST_FINAL, LAST_FINAL do
    local c = tonumber(h[i]) or 0
    counts[i - DEFERRALS] = c
    final = final + c
    if c > 0 then
      last = i - DEFERRALS
      exceptional = exceptional or i ~= DELIVERED
    end
  end
  if final < n then
    return 0
  end
  -- The queue, and when a batch task owned the job the last 6 characters
  -- of that task's id (taskTag), which tell its submission from another
  -- batch's of the same id, queue and millisecond (finishedBy).
  local owner = h[3] or ''
  if h[TASK] and h[TASK] ~= '' then
    owner = owner .. '@' .. string.sub(h[TASK], -6)
  end
  local entry = table.concat({owner, epoch_ms(h[4]), h[2], epoch_ms(h[5]), epoch_ms(h[6]), h[DEFERRALS] or '0',
    table.concat(counts, ',', 1, last)}, '|')
  -- The app, when the record has one, is an eighth field.
  if h[APP] and h[APP] ~= '' then
    entry = entry .. '|' .. h[APP]
  end
  redis.call('HSET', into, string.sub(job, 11, -2), entry)
  redis.call('PEXPIREAT', into, expire_at)
  redis.call('DEL', job, recp, dev)
  if exceptional then
    -- The recipients that ended other than delivered stay readable as
    -- long as the entry (exceptKey); a job that reached everyone has none.
    redis.call('PEXPIREAT', except, expire_at)
  end
  return 1
end

-- retire: job, recp, dev are the job's keys, into the done bucket to add
-- to and expire_at when that bucket expires (Unix ms). Returns 1 when it
-- retired the job.
local function retire(job, recp, dev, into, expire_at, except)
  return retire_with(redis.call('HMGET', job, unpack(retire_fields)), job, recp, dev, into, expire_at, except)
end
