-- ratekit token bucket. twin.go makes the same decision in Go, step by step.
--
-- KEYS[1]  the bucket: a string "tokens:last_refill_us", or absent (full)
-- ARGV     now_us (-1: read the server's TIME), n, capacity, refill_rate,
--          refill_interval_us, peek (1: decide for n without writing)
-- reply    {allowed, tokens_left, retry_after_us, reset_after_us}
--
-- Integers only, all below 2^53: a double computes them exactly.
local key = KEYS[1]
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
local rate = tonumber(ARGV[4])
local interval = tonumber(ARGV[5])
local peek = ARGV[6] == '1'
local client_clock = now >= 0
if not client_clock then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local tokens, last = cap, now
local state = redis.call('GET', key)
if state then
  local a, b = string.match(state, '^(%d+):(%d+)$')
  if not a then
    return redis.error_reply('ERR ratekit: token bucket state is corrupt')
  end
  tokens, last = tonumber(a), tonumber(b)
  if tokens > cap then tokens = cap end
end

-- Whole refill intervals since last_refill, as in the seed.
if tokens < cap and now > last then
  local refills = math.floor((now - last) / interval)
  if refills > 0 then
    local to_full = math.floor((cap - tokens + rate - 1) / rate)
    if refills >= to_full then
      tokens = cap
    else
      tokens = tokens + refills * rate
      last = last + refills * interval
    end
  end
end
-- A full bucket is a fresh bucket: it forgets its refill phase, so stale
-- state decides exactly like an absent (expired) key.
if tokens >= cap then
  tokens = cap
  last = now
end

local allowed = 0
if tokens >= n then
  allowed = 1
  if not peek then tokens = tokens - n end
end
local retry = 0
if allowed == 0 then
  retry = last + math.floor((n - tokens + rate - 1) / rate) * interval - now
end
local reset = 0
if tokens < cap then
  reset = last + math.floor((cap - tokens + rate - 1) / rate) * interval - now
end
if allowed == 1 and not peek then
  -- reset > 0 here. With a client clock, 60 s of slack for clock skew.
  local ttl = math.floor((reset + 999) / 1000)
  if client_clock then ttl = ttl + 60000 end
  redis.call('SET', key, string.format('%d:%d', tokens, last),
    'PX', string.format('%d', ttl))
end
return {allowed, tokens, retry, reset}
