-- ratekit sliding window log: the step. twin.go makes the same decision in
-- Go, step by step; internal/engine composes the scripts that call it.
--
-- key      a sorted set with one member per allowed unit of cost:
--          score = time in µs, member = "time_us:index" (unique without any
--          id from the client: index, ten digits, counts up within one µs),
--          and one member "~" whose score is the time the log was written
--          to expire: its newest entry's time plus the Window it was written
--          with. From then on the log counts as empty. Absent: an empty log.
-- limit, window_us: the parameters
-- returns  allowed, remaining, retry_after_us, reset_after_us, then
--          false when the log is to be deleted, or nil, nil and the
--          function that writes the new log (nothing when nothing is
--          written)
--
-- An entry counts while its time is later than t - window, as in the
-- guide, which removes scores <= t - window. t is now, or the newest
-- entry's time when the clock is behind it: a key's log never runs
-- backwards, and the waits below count the difference. Only an allowed
-- request writes (it drops the entries that can never count again, then
-- adds its own); a denied one and a peek only read. Every read is made
-- here, when deciding; the write function only writes.

-- slidinglog_score(s): an entry's time, or nil when it is not one ratekit
-- wrote.
local function slidinglog_score(s)
  local v = tonumber(s)
  if not v or v ~= math.floor(v) or v < 0 or v > MAX_STATE then return nil end
  return v
end

local function slidinglog(key, now, client_clock, n, mode, limit, window_us)
  local window = window_us
  local peek, refund = mode == MODE_PEEK, mode == MODE_REFUND

  -- The newest entry and the expiry mark are the two greatest scores.
  local top = redis.pcall('ZRANGE', key, -2, -1, 'WITHSCORES')
  if top.err then return CORRUPT, 0, 0, 0 end
  local exists = top[1] ~= nil
  local t, newest, fresh, next_index = now, nil, nil, 0
  if exists then
    if #top ~= 4 or top[3] ~= '~' then return CORRUPT, 0, 0, 0 end
    newest, fresh = slidinglog_score(top[2]), slidinglog_score(top[4])
    local index = string.match(top[1], '^%d+:(%d+)$')
    if not newest or not fresh or not index or fresh <= newest then return CORRUPT, 0, 0, 0 end
    if math.max(now, newest) >= fresh then
      newest, fresh = nil, nil -- expired: an empty log
    elseif newest >= now then
      t = newest
      -- The greatest member at score t names the last index used there.
      next_index = tonumber(index)
    end
  end
  local cutoff = string.format('%d', t - window)
  local after_cutoff = '(' .. cutoff

  local count = 0
  if newest and newest > t - window then
    count = redis.call('ZCOUNT', key, after_cutoff, '(' .. string.format('%d', fresh))
  end
  -- A refund removes the n newest live entries (fewer if there are fewer:
  -- an entry that has left the window cannot be refunded), then reports as
  -- a Peek would.
  local refund_write
  if refund then
    local k = math.min(n, count)
    n, peek = 1, true
    if k > 0 then
      count = count - k
      if count == 0 then
        refund_write = false
      else
        local e = redis.call('ZRANGEBYSCORE', key, after_cutoff, '+inf', 'WITHSCORES', 'LIMIT', count - 1, 1)
        newest = slidinglog_score(e[2])
        local gone = redis.call('ZRANGEBYSCORE', key, after_cutoff, '(' .. string.format('%d', fresh), 'LIMIT', count, k)
        refund_write = function()
          redis.call('ZREMRANGEBYSCORE', key, '-inf', cutoff)
          redis.call('ZREM', key, unpack(gone))
        end
      end
    end
  end

  local allowed = 0
  if count + n <= limit then allowed = 1 end

  local retry, reset = 0, 0
  local write = refund_write
  if allowed == 1 and not peek then
    count = count + n
    reset = t + window - now
    write = function()
      if newest then
        redis.call('ZREMRANGEBYSCORE', key, '-inf', cutoff)
      elseif exists then
        redis.call('DEL', key)
      end
      local at = string.format('%d', t)
      local i = 0
      while i < n do
        local batch = {}
        local j = 0
        while i < n and j < 200 do
          i = i + 1
          batch[2 * j + 1] = at
          batch[2 * j + 2] = at .. ':' .. string.format('%010d', next_index + i)
          j = j + 1
        end
        if i == n then
          -- The last batch moves the expiry mark too.
          batch[2 * j + 1] = string.format('%d', t + window)
          batch[2 * j + 2] = '~'
        end
        redis.call('ZADD', key, unpack(batch))
      end
      redis.call('PEXPIRE', key, ttl_ms(reset, client_clock))
    end
  else
    if allowed == 0 then
      -- The (count + n - limit)-th oldest live entry must leave the window.
      local e = redis.call('ZRANGEBYSCORE', key, after_cutoff, '+inf', 'WITHSCORES', 'LIMIT', count + n - limit - 1, 1)
      local at = slidinglog_score(e[2])
      if not at then return CORRUPT, 0, 0, 0 end
      retry = math.min(at + window, fresh) - now
    end
    if count > 0 then reset = math.min(newest + window, fresh) - now end
  end
  local remaining = limit - count
  if remaining < 0 then remaining = 0 end
  if write == false then return allowed, remaining, retry, reset, false end
  return allowed, remaining, retry, reset, nil, nil, write
end
