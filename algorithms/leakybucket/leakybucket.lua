-- ratekit leaky bucket (policing). twin.go makes the same decision in Go.
--
-- KEYS[1]  the bucket: a string "level:last_leak_us", or absent (empty).
--          level is scaled by per_us, so that a leak of rate units per
--          per_us drains exactly rate scaled units every microsecond.
-- ARGV     now_us (-1: read the server's TIME), n, capacity, rate, per_us,
--          mode (1: peek, decide for n without writing)
-- reply    {allowed, remaining, retry_after_us, reset_after_us}
local key = KEYS[1]
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local rate = tonumber(ARGV[4])
local per = tonumber(ARGV[5])
local peek = ARGV[6] == '1'
local client_clock = now >= 0
if not client_clock then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local level, last = 0, now
local state = redis.call('GET', key)
if state then
  local a, b = string.match(state, '^(%d+):(%d+)$')
  if not a then
    return redis.error_reply('ERR ratekit: leaky bucket state is corrupt')
  end
  level, last = tonumber(a), tonumber(b)
end
-- Drain since the last leak, never below empty.
if level > 0 and now > last then
  local elapsed = now - last
  if elapsed >= math.floor((level + rate - 1) / rate) then
    level = 0
  else
    level = level - elapsed * rate
  end
end

local full = capacity * per
local add = n * per
local allowed = 0
if level + add <= full then
  allowed = 1
  if not peek then level = level + add end
end
local retry = 0
if allowed == 0 then retry = math.floor((level + add - full + rate - 1) / rate) end
local reset = math.floor((level + rate - 1) / rate)
if allowed == 1 and not peek then
  local ttl = math.floor((reset + 999) / 1000)
  if client_clock then ttl = ttl + 60000 end
  redis.call('SET', key, string.format('%d:%d', level, now), 'PX', string.format('%d', ttl))
end
return {allowed, math.floor((full - level) / per), retry, reset}
