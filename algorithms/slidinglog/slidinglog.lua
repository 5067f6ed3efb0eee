-- ratekit sliding window log. twin.go makes the same decision in Go.
--
-- KEYS[1]  a sorted set with one member per allowed unit of cost:
--          score = time in µs, member = "time_us:index" (unique without any
--          id from the client: index, ten digits, counts up within one µs)
-- ARGV     now_us (-1: read the server's TIME), n, limit, window_us,
--          mode (1: peek, decide for n without writing)
-- reply    {allowed, remaining, retry_after_us, reset_after_us}
--
-- An entry counts while its time is later than now - window, as in the
-- guide, which removes scores <= now - window.
local key = KEYS[1]
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local peek = ARGV[5] == '1'
local client_clock = now >= 0
if not client_clock then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local fmt = string.format
local cutoff = fmt('%d', now - window)
local after_cutoff = '(' .. cutoff

-- Live entries: later than now - window. A write call drops the others
-- first (they can never count again), then counts what is left.
local count
if peek then
  count = redis.call('ZCOUNT', key, after_cutoff, '+inf')
else
  redis.call('ZREMRANGEBYSCORE', key, '-inf', cutoff)
  count = redis.call('ZCARD', key)
end
local allowed = 0
if count + n <= limit then allowed = 1 end

local retry, reset = 0, 0
if allowed == 1 and not peek then
  -- Members are "time:index" with a fixed-width index, so the greatest
  -- member at score now names the last index used at this microsecond.
  local at = fmt('%d', now)
  local newest, next_index = now, 0
  local top = redis.call('ZREVRANGEBYSCORE', key, '+inf', at, 'WITHSCORES', 'LIMIT', 0, 1)
  if top[1] then
    local score = tonumber(top[2])
    if score == now then
      next_index = tonumber(string.match(top[1], ':(%d+)$'))
    else
      -- The clock went back: entries are newer than now.
      newest = score
      next_index = redis.call('ZCOUNT', key, at, at)
    end
  end
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
    redis.call('ZADD', key, unpack(batch))
  end
  count = count + n
  reset = newest + window - now
  local ttl = math.floor((reset + 999) / 1000)
  if client_clock then ttl = ttl + 60000 end
  redis.call('PEXPIRE', key, fmt('%d', ttl))
else
  if allowed == 0 then
    -- The (count + n - limit)-th oldest live entry must leave the window.
    local e = redis.call('ZRANGEBYSCORE', key, after_cutoff, '+inf', 'WITHSCORES', 'LIMIT', count + n - limit - 1, 1)
    retry = tonumber(e[2]) + window - now
  end
  if count > 0 then
    local e = redis.call('ZREVRANGEBYSCORE', key, '+inf', after_cutoff, 'WITHSCORES', 'LIMIT', 0, 1)
    reset = tonumber(e[2]) + window - now
  end
end
return {allowed, limit - count, retry, reset}
