-- ratekit fixed window counter: the step. twin.go makes the same decision
-- in Go; internal/engine composes the scripts that call it.
--
-- key      the window: the state (prelude) count, start_us, end_us, or
--          absent. end_us is start_us + window_us of the configuration that wrote it.
-- limit, window_us, start_us (0, or the calendar period's start),
--          aligned (1: windows start at multiples of window_us since the
--          epoch): the parameters
-- returns  allowed, remaining, retry_after_us, reset_after_us, and the
--          new state's value and TTL in µs (nil when nothing is written;
--          false deletes the key; a TTL of false keeps the key's)
--
-- A window starts at the first request after the previous one ended and
-- lasts window_us, as in the guide, but it ends by the stored start and
-- now, not by the key's TTL: the TTL only collects garbage.
--
-- A clock behind the window's start keeps the window: the waits below then
-- count the difference. A count above Limit only comes from a larger Limit:
-- the window is full under this one. A window ends at start + Window, or
-- at the end it was written with, whichever comes first: so a longer
-- Window never stretches state beyond the TTL it was written with.
--
-- A count is written with a TTL to its window's end: a write that keeps
-- that end keeps the key's TTL (SET ... KEEPTTL) rather than setting it
-- again, the same expiry for a fraction of the server's work. twin.go
-- sets the TTL it computes, which ends at the same instant.
local function fixedwindow(key, now, client_clock, n, mode, limit, window_us, start_us, aligned)
  local window = window_us
  local peek, refund = mode == MODE_PEEK, mode == MODE_REFUND

  -- A new window opens now, or, on a calendar (start_us > 0), is the
  -- calendar period [start_us, start_us + window_us) that holds now, or,
  -- aligned, the multiple of window_us that holds now.
  local open = now
  if start_us > 0 then
    open = start_us
  elseif aligned == 1 then
    open = now - now % window
  end
  local count, start, stop = 0, open, open + window
  local keep = false
  local s1, s2, s3 = read_state(key, 3)
  if s1 == false then return CORRUPT, 0, 0, 0 end
  if s1 then
    count, start, stop = s1, s2, s2 + window
    if count > limit then count = limit end
    if stop > s3 then stop = s3 end
    if now >= stop then
      count, start, stop = 0, open, open + window
    else
      keep = s1 > 0 and stop == s3
    end
  end

  -- A refund takes n back from the window's count (never below zero),
  -- then reports as a Peek would. A window refunded to zero is forgotten:
  -- the next request opens a new one, as if none had been counted.
  local refunded = false
  if refund then
    refunded = count > 0
    count = math.max(count - n, 0)
    n, peek = 1, true
  end

  local allowed = 0
  if count + n <= limit then
    allowed = 1
    if not peek then count = count + n end
  end
  local retry, reset = 0, 0
  if allowed == 0 then retry = stop - now end
  if count > 0 then reset = stop - now end
  local ttl = false -- keeps the key's
  if allowed == 1 and not peek then
    if not keep then ttl = reset end
    return allowed, limit - count, retry, reset, state(count, start, stop), ttl
  elseif refunded and count == 0 then
    return allowed, limit - count, retry, reset, false
  elseif refunded then
    if not keep then ttl = stop - now end
    return allowed, limit - count, retry, reset, state(count, start, stop), ttl
  end
  return allowed, limit - count, retry, reset
end
