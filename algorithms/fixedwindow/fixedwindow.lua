-- ratekit fixed window counter. twin.go makes the same decision in Go.
--
-- KEYS[1]  the window: a string "count:start_us", or absent
-- ARGV     now_us (-1: read the server's TIME), n, limit, window_us,
--          mode (1: peek, decide for n without writing)
-- reply    {allowed, remaining, retry_after_us, reset_after_us}
--
-- A window starts at the first request after the previous one ended and
-- lasts window_us, as in the guide, but it ends by the stored start and
-- now, not by the key's TTL: the TTL only collects garbage.
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

local count, start = 0, now
local state = redis.call('GET', key)
if state then
  local a, b = string.match(state, '^(%d+):(%d+)$')
  if not a then
    return redis.error_reply('ERR ratekit: fixed window state is corrupt')
  end
  count, start = tonumber(a), tonumber(b)
  if now >= start + window then
    count, start = 0, now
  end
end

local allowed = 0
if count + n <= limit then
  allowed = 1
  if not peek then count = count + n end
end
local retry, reset = 0, 0
if allowed == 0 then retry = start + window - now end
if count > 0 then reset = start + window - now end
if allowed == 1 and not peek then
  local ttl = math.floor((reset + 999) / 1000)
  if client_clock then ttl = ttl + 60000 end
  redis.call('SET', key, string.format('%d:%d', count, start), 'PX', string.format('%d', ttl))
end
local remaining = limit - count
if remaining < 0 then remaining = 0 end
return {allowed, remaining, retry, reset}
