-- ratekit concurrency limiter: the step. twin.go makes the same decision
-- in Go, step by step; internal/engine composes the scripts that call it
-- (engine.ArgsScript for acquire, release and extend, which take the
-- lease's id; the spec's read-only script for peek).
--
-- key      a sorted set with one member per unit of cost of every lease:
--          member "a:b:n:i" (a:b the lease's id, two int64s; n its cost;
--          i from 1 to n), score the time in µs the lease expires. All the
--          units of a lease share its expiry. Absent: no lease.
-- n        the cost to acquire (1 for a peek), or the lease's cost
-- mode     0 acquire, 1 peek, 3 release, 4 extend
-- limit, ttl_us: the parameters; lease_a, lease_b: the lease's id, as the
--          decimal strings ARGV holds (absent for a peek)
-- returns  allowed (1 when acquired, released or extended), remaining
--          (limit minus the units in flight, at least 0), retry_after_us
--          (a denied acquire or peek: until enough units expire),
--          reset_after_us (until every lease has expired), then nil, nil
--          and the function that writes (nothing when nothing is written)
--
-- A lease counts while its expiry is later than now. Only a granted
-- acquire, and a release or an extension of a live lease, write, and every
-- write first drops the leases that have expired; a denial, a peek and a
-- call on a lease that is not live only read. Every read is made here,
-- when deciding; the write function only writes.

-- concurrency_time(s): an expiry, or nil when it is not one ratekit wrote.
local function concurrency_time(s)
  local v = tonumber(s)
  if not v or v ~= math.floor(v) or v < 0 or v > MAX_STATE then return nil end
  return v
end

-- concurrency_units(key, cmd, score, id, n): cmd (ZADD with score, or
-- ZREM) on the n units of the lease id, 200 at a time.
local function concurrency_units(key, cmd, score, id, n)
  local i = 0
  while i < n do
    local batch, j = {}, 0
    while i < n and j < 200 do
      i = i + 1
      if score then
        batch[2 * j + 1] = score
        batch[2 * j + 2] = id .. string.format('%d', i)
      else
        batch[j + 1] = id .. string.format('%d', i)
      end
      j = j + 1
    end
    redis.call(cmd, key, unpack(batch))
  end
end

local function concurrency(key, now, client_clock, n, mode, limit, ttl_us, lease_a, lease_b)
  local ttl = ttl_us

  -- The unit that expires last: when no lease is left.
  local top = redis.pcall('ZRANGE', key, -1, -1, 'WITHSCORES')
  if top.err then return CORRUPT, 0, 0, 0 end
  local last = 0
  if top[1] then
    last = concurrency_time(top[2])
    if not last or not string.match(top[1], '^%-?%d+:%-?%d+:%d+:%d+$') then return CORRUPT, 0, 0, 0 end
  end
  local now_s = string.format('%d', now)
  local after = '(' .. now_s
  local count = 0
  if last > now then count = redis.call('ZCOUNT', key, after, '+inf') end
  local remaining = limit - count
  if remaining < 0 then remaining = 0 end
  local reset = 0
  if count > 0 then reset = last - now end

  if mode == MODE_ALLOW or mode == MODE_PEEK then
    if count + n > limit then
      -- The (count + n - limit)-th unit to expire frees the room for n.
      local e = redis.call('ZRANGEBYSCORE', key, after, '+inf', 'WITHSCORES', 'LIMIT', count + n - limit - 1, 1)
      local at = concurrency_time(e[2])
      if not at then return CORRUPT, 0, 0, 0 end
      return 0, remaining, at - now, reset
    end
    if mode == MODE_PEEK then return 1, remaining, 0, reset end
    local expires = now + ttl
    local fresh = math.max(last, expires)
    local id = lease_a .. ':' .. lease_b .. ':' .. string.format('%d', n) .. ':'
    return 1, limit - count - n, 0, fresh - now, nil, nil, function()
      if last > 0 then redis.call('ZREMRANGEBYSCORE', key, '-inf', now_s) end
      concurrency_units(key, 'ZADD', string.format('%d', expires), id, n)
      redis.call('PEXPIRE', key, ttl_ms(fresh - now, client_clock))
    end
  end

  -- Release or extend: the lease's first unit says whether it is live.
  local id = lease_a .. ':' .. lease_b .. ':' .. string.format('%d', n) .. ':'
  local s = redis.call('ZSCORE', key, id .. '1')
  local at = false
  if s then
    at = concurrency_time(s)
    if not at then return CORRUPT, 0, 0, 0 end
  end
  if not at or at <= now then return 0, remaining, 0, reset end

  if mode == MODE_REFUND then
    -- The last expiry of the other live leases: the first unit from the
    -- top that is not this lease's (it has n units).
    local others = 0
    local tops = redis.call('ZREVRANGEBYSCORE', key, '+inf', after, 'WITHSCORES', 'LIMIT', 0, n + 1)
    for k = 1, #tops, 2 do
      if string.sub(tops[k], 1, #id) ~= id then
        others = concurrency_time(tops[k + 1])
        if not others then return CORRUPT, 0, 0, 0 end
        break
      end
    end
    local left = limit - (count - n)
    if left < 0 then left = 0 end
    local rst = 0
    if others > 0 then rst = others - now end
    return 1, left, 0, rst, nil, nil, function()
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now_s)
      concurrency_units(key, 'ZREM', nil, id, n)
      -- With no other lease left the set is empty, and Redis deleted it.
      if others > 0 then redis.call('PEXPIRE', key, ttl_ms(others - now, client_clock)) end
    end
  end

  -- Extend: the lease lives ttl from now, and never less than it did.
  local expires = math.max(at, now + ttl)
  local fresh = math.max(last, expires)
  return 1, remaining, 0, fresh - now, nil, nil, function()
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now_s)
    concurrency_units(key, 'ZADD', string.format('%d', expires), id, n)
    redis.call('PEXPIRE', key, ttl_ms(fresh - now, client_clock))
  end
end
