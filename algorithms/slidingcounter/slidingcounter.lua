-- ratekit sliding window counter. twin.go makes the same decision in Go.
--
-- KEYS[1]  both windows in one string "window_number:previous:current",
--          or absent. Windows are aligned to the epoch, as in the guide.
-- ARGV     now_us (-1: read the server's TIME), n, limit, window_us,
--          mode (1: peek, decide for n without writing)
-- reply    {allowed, remaining, retry_after_us, reset_after_us}
--
-- The guide's estimate prev * (1 - elapsed) + curr, in exact integers:
-- with e = now - window start, a request of cost n passes when
--   prev * (W - e) + curr * W < (limit - n + 1) * W
-- (for n = 1: estimate < limit, the guide's test).
local key = KEYS[1]
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local W = tonumber(ARGV[4])
local peek = ARGV[5] == '1'
local client_clock = now >= 0
if not client_clock then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local wn = math.floor(now / W)
local prev, curr = 0, 0
local state = redis.call('GET', key)
if state then
  local a, b, c = string.match(state, '^(%d+):(%d+):(%d+)$')
  if not a then
    return redis.error_reply('ERR ratekit: sliding counter state is corrupt')
  end
  a, b, c = tonumber(a), tonumber(b), tonumber(c)
  if a == wn then
    prev, curr = b, c
  elseif a == wn - 1 then
    prev = c
  elseif a > wn then
    -- The clock went back: decide as at the start of the newest window.
    wn, prev, curr = a, b, c
  end
end
local start = wn * W
local e = now - start
if e < 0 then e = 0 end

local K = limit - n + 1
local allowed = 0
if prev * (W - e) + curr * W < K * W then
  allowed = 1
  if not peek then curr = curr + n end
end

local retry = 0
if allowed == 0 then
  local at = -1
  -- This window: the estimate falls as e grows.
  if curr < K and prev > 0 then
    local es = W - math.floor(((K - curr) * W - 1) / prev)
    if es < W then at = start + es end
  end
  -- The next window: prev becomes curr, curr becomes 0.
  if at < 0 then
    if curr == 0 then
      at = start + W
    else
      local es = W - math.floor((K * W - 1) / curr)
      if es < 0 then es = 0 end
      if es < W then at = start + W + es end
    end
  end
  if at < 0 then at = start + 2 * W end
  retry = at - now
end

local reset = 0
if curr > 0 then
  reset = start + 2 * W - now
elseif prev > 0 then
  reset = start + W - now
end
if allowed == 1 and not peek then
  local ttl = math.floor((reset + 999) / 1000)
  if client_clock then ttl = ttl + 60000 end
  redis.call('SET', key, string.format('%d:%d:%d', wn, prev, curr), 'PX', string.format('%d', ttl))
end

-- Remaining: how many requests of cost 1 would pass now.
local remaining = 0
local d = limit * W - curr * W - prev * (W - e)
if d > 0 then remaining = math.floor((d + W - 1) / W) end
return {allowed, remaining, retry, reset}
