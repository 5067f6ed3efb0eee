-- ratekit sliding window log. twin.go makes the same decision in Go.
--
-- KEYS[1]  a sorted set with one member per allowed unit of cost:
--          score = time in µs, member = "time_us:i" (unique without any
--          id from the client: i counts the members already at that time)
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
local after_cutoff = '(' .. fmt('%d', now - window)

local count = redis.call('ZCOUNT', key, after_cutoff, '+inf')
local allowed = 0
if count + n <= limit then allowed = 1 end

if allowed == 1 and not peek then
  redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt('%d', now - window))
  local at = fmt('%d', now)
  local same = redis.call('ZCOUNT', key, at, at)
  local i = 0
  while i < n do
    local batch = {}
    local j = 0
    while i < n and j < 200 do
      i = i + 1
      batch[2 * j + 1] = at
      batch[2 * j + 2] = at .. ':' .. fmt('%d', same + i)
      j = j + 1
    end
    redis.call('ZADD', key, unpack(batch))
  end
  count = count + n
end

local retry, reset = 0, 0
if allowed == 0 then
  -- The (count + n - limit)-th oldest entry must leave the window.
  local e = redis.call('ZRANGEBYSCORE', key, after_cutoff, '+inf', 'WITHSCORES', 'LIMIT', count + n - limit - 1, 1)
  retry = tonumber(e[2]) + window - now
end
if count > 0 then
  local e = redis.call('ZREVRANGEBYSCORE', key, '+inf', after_cutoff, 'WITHSCORES', 'LIMIT', 0, 1)
  reset = tonumber(e[2]) + window - now
end
if allowed == 1 and not peek then
  local ttl = math.floor((reset + 999) / 1000)
  if client_clock then ttl = ttl + 60000 end
  redis.call('PEXPIRE', key, fmt('%d', ttl))
end
return {allowed, limit - count, retry, reset}
