-- ratekit sliding window log. twin.go makes the same decision in Go.
--
-- KEYS[1]  a sorted set with one member per allowed unit of cost:
--          score = time in µs, member = "time_us:index" (unique without any
--          id from the client: index, ten digits, counts up within one µs),
--          and one member "~" whose score is the time the log was written
--          to expire: its newest entry's time plus the Window it was written
--          with. From then on the log counts as empty.
-- ARGV     now_us (-1: read the server's TIME), n, limit, window_us,
--          mode (1: peek, decide for n without writing)
-- reply    {allowed, remaining, retry_after_us, reset_after_us}
--
-- An entry counts while its time is later than t - window, as in the
-- guide, which removes scores <= t - window. t is now, or the newest
-- entry's time when the clock is behind it: a key's log never runs
-- backwards, and the waits below count the difference. Only an allowed
-- request writes (it drops the entries that can never count again, then
-- adds its own); a denied one and a peek only read.
local key = KEYS[1]
local now, client_clock = clock(tonumber(ARGV[1]))
local n = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local peek = ARGV[5] == '1'
local fmt = string.format

-- score(s): an entry's time, or nil when it is not one ratekit wrote.
local function score(s)
  local v = tonumber(s)
  if not v or v ~= math.floor(v) or v < 0 or v > MAX_STATE then return nil end
  return v
end

-- The newest entry and the expiry mark are the two greatest scores.
local top = redis.pcall('ZRANGE', key, -2, -1, 'WITHSCORES')
if top.err then return CORRUPT end
local t, newest, fresh, next_index = now, nil, nil, 0
if top[1] then
  if #top ~= 4 or top[3] ~= '~' then return CORRUPT end
  newest, fresh = score(top[2]), score(top[4])
  local index = string.match(top[1], '^%d+:(%d+)$')
  if not newest or not fresh or not index or fresh <= newest then return CORRUPT end
  if math.max(now, newest) >= fresh then
    newest, fresh = nil, nil -- expired: an empty log
  elseif newest >= now then
    t = newest
    -- The greatest member at score t names the last index used there.
    next_index = tonumber(index)
  end
end
local cutoff = fmt('%d', t - window)
local after_cutoff = '(' .. cutoff

local count = 0
if newest and newest > t - window then
  count = redis.call('ZCOUNT', key, after_cutoff, '(' .. fmt('%d', fresh))
end
local allowed = 0
if count + n <= limit then allowed = 1 end

local retry, reset = 0, 0
if allowed == 1 and not peek then
  if newest then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', cutoff)
  elseif top[1] then
    redis.call('DEL', key)
  end
  local at = fmt('%d', t)
  local i = 0
  while i < n do
    local batch = {}
    local j = 0
    while i < n and j < 200 do
      i = i + 1
      batch[2 * j + 1] = at
      batch[2 * j + 2] = at .. ':' .. fmt('%010d', next_index + i)
      j = j + 1
    end
    if i == n then
      -- The last batch moves the expiry mark too.
      batch[2 * j + 1] = fmt('%d', t + window)
      batch[2 * j + 2] = '~'
    end
    redis.call('ZADD', key, unpack(batch))
  end
  count = count + n
  reset = t + window - now
  redis.call('PEXPIRE', key, ttl_ms(reset, client_clock))
else
  if allowed == 0 then
    -- The (count + n - limit)-th oldest live entry must leave the window.
    local e = redis.call('ZRANGEBYSCORE', key, after_cutoff, '+inf', 'WITHSCORES', 'LIMIT', count + n - limit - 1, 1)
    local at = score(e[2])
    if not at then return CORRUPT end
    retry = math.min(at + window, fresh) - now
  end
  if count > 0 then reset = math.min(newest + window, fresh) - now end
end
local remaining = limit - count
if remaining < 0 then remaining = 0 end
return {allowed, remaining, retry, reset}
