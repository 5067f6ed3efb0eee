-- ratekit GCRA (generic cell rate algorithm). twin.go makes the same
-- decision in Go.
--
-- KEYS[1]  the theoretical arrival time (TAT): a string "tat_us:frac", the
--          time tat_us + frac/rate µs, or absent. One GET, one SET with TTL.
-- ARGV     now_us (-1: read the server's TIME), n, rate, period_us, burst,
--          mode (0: allow n, 1: peek for n, 2: allow at most n)
-- reply    {allowed (mode 2: units granted), remaining, retry_after_us,
--          reset_after_us}
--
-- Times are scaled by rate, so the emission interval period/rate is exactly
-- period scaled units, and x = (TAT - now) * rate stays small.
local key = KEYS[1]
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local rate = tonumber(ARGV[3])
local period = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local mode = tonumber(ARGV[6])
local client_clock = now >= 0
if not client_clock then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local cap = burst * period
local x = 0
local state = redis.call('GET', key)
if state then
  local a, b = string.match(state, '^(%d+):(%d+)$')
  if not a then
    return redis.error_reply('ERR ratekit: gcra state is corrupt')
  end
  a, b = tonumber(a), tonumber(b)
  if a >= now then
    -- A TAT more than a whole burst ahead only comes from a clock that went
    -- back; it is held at one burst (plus one) ahead, which still denies.
    local d = a - now
    local dmax = math.floor(cap / rate) + 1
    if d > dmax then d, b = dmax, 0 end
    x = d * rate + b
  end
end

local avail = 0
if cap >= x then avail = math.floor((cap - x) / period) end
local m = n
if mode == 2 and avail < n then m = avail end
if m < 1 then m = 1 end
local allowed = 0
if x + m * period <= cap then allowed = 1 end

local retry = 0
if allowed == 0 then retry = math.floor((x + m * period - cap + rate - 1) / rate) end
if allowed == 1 and mode ~= 1 then x = x + m * period end
local reset = math.floor((x + rate - 1) / rate)
if allowed == 1 and mode ~= 1 then
  local ttl = math.floor((reset + 999) / 1000)
  if client_clock then ttl = ttl + 60000 end
  redis.call('SET', key, string.format('%d:%d', now + math.floor(x / rate), x % rate), 'PX', string.format('%d', ttl))
  avail = math.floor((cap - x) / period)
end
if mode == 2 and allowed == 1 then allowed = m end
return {allowed, avail, retry, reset}
