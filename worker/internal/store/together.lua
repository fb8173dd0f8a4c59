-- together.lua: the hush:waiting-jobs groups of one held queue and second
-- of waking, which every batch run that holds jobs back to that second
-- adds to, and whose one hush:waiting-second task takes them at that
-- second (waitingsecond.go explains who calls what, and why it is safe).
--
-- KEYS[1] waiting groups  hush:jobs-at:{<queue>/<second>}
-- KEYS[2] taken groups    hush:jobs-at:{<queue>/<second>}:taken
-- KEYS[3] woken groups    hush:jobs-at:{<queue>/<second>}:woken
--
-- ARGV[1] op     "join", "take", "pluck" or "done"
-- ARGV[2] ttl    milliseconds: of KEYS[1] and KEYS[3] (join, pluck), of
--                KEYS[2] (take), of the mark KEYS[2] becomes (done)
-- ARGV[3] group  the group's task id (join, pluck)
-- ARGV[4] body   the group's payload, a hush:waiting-jobs task's (join)
--
-- join: 1 when the group waits in KEYS[1] (added, or there already); 2
-- when the second's task took it already; 0 when the task took the second
-- without it, or it was woken to run on its own: the caller then makes
-- the group's own hush:waiting-jobs task.
-- take: {taken groups, woken groups}, each as field, value, ...; the first
-- take moves KEYS[1] to KEYS[2] (a mark when nothing waits), so that no
-- group joins after it; a later take (a re-run) answers KEYS[2] again, or
-- no groups once done.
-- pluck: the group's payload, moved from KEYS[1] to KEYS[3], or false when
-- the second was taken or the group does not wait there.
-- done: KEYS[2] becomes a mark (joins are still answered 0); KEYS[3] goes.
local op = ARGV[1]
local ttl = ARGV[2]
local group = ARGV[3]
local body = ARGV[4]

if op == 'join' then
  if redis.call('HEXISTS', KEYS[3], group) == 1 then
    return 0
  end
  local taken = redis.call('TYPE', KEYS[2])['ok']
  if taken == 'hash' then
    return redis.call('HEXISTS', KEYS[2], group) == 1 and 2 or 0
  elseif taken ~= 'none' then
    return 0
  end
  redis.call('HSETNX', KEYS[1], group, body)
  redis.call('PEXPIRE', KEYS[1], ttl)
  return 1
elseif op == 'take' then
  local taken = redis.call('TYPE', KEYS[2])['ok']
  if taken == 'none' then
    if redis.call('EXISTS', KEYS[1]) == 1 then
      redis.call('RENAME', KEYS[1], KEYS[2])
      redis.call('PEXPIRE', KEYS[2], ttl)
      taken = 'hash'
    else
      redis.call('SET', KEYS[2], '1', 'PX', ttl)
    end
  end
  local groups = {}
  if taken == 'hash' then
    groups = redis.call('HGETALL', KEYS[2])
  end
  return {groups, redis.call('HGETALL', KEYS[3])}
elseif op == 'pluck' then
  if redis.call('EXISTS', KEYS[2]) == 1 then
    return false
  end
  local b = redis.call('HGET', KEYS[1], group)
  if not b then
    return false
  end
  redis.call('HSET', KEYS[3], group, b)
  redis.call('PEXPIRE', KEYS[3], ttl)
  redis.call('HDEL', KEYS[1], group)
  return b
elseif op == 'done' then
  redis.call('SET', KEYS[2], '1', 'PX', ttl)
  redis.call('DEL', KEYS[3])
  return 1
end
return redis.error_reply('together.lua: unknown op ' .. tostring(op))
