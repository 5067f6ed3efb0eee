-- ratekit sliding window counter: the step. twin.go makes the same decision
-- in Go; internal/engine composes the scripts that call it.
--
-- key      both windows in one state (prelude): window_number, previous,
--          current, window_us, fresh_at_us; or absent. Windows are aligned to the epoch, as in the guide;
--          fresh_at_us is when both counts have left the estimate.
-- limit, window_us: the parameters
-- returns  allowed, remaining, retry_after_us, reset_after_us, and the
--          new state's value and TTL in µs (nil when nothing is written)
--
-- The guide's estimate prev * (1 - elapsed) + curr, in exact integers:
-- with e = now - window start, a request of cost n passes when
--   prev * (W - e) + curr * W < (limit - n + 1) * W
-- (for n = 1: estimate < limit, the guide's test).
--
-- State written under another configuration: counts above Limit are
-- counted as Limit; under another Window, both counts move into the new
-- window that holds the old current window's start; and from its
-- fresh_at_us on the state counts as absent, so it never outlives the TTL
-- it was written with.
local function slidingcounter(key, now, client_clock, n, mode, limit, window_us)
  local W = window_us
  local peek, refund = mode == MODE_PEEK, mode == MODE_REFUND

  local wn = idiv(now, W)
  local prev, curr, fresh = 0, 0, nil
  local s1, s2, s3, w, s5 = read_state(key, 5)
  if s1 == false then return CORRUPT, 0, 0, 0 end
  if s1 and (w < 1 or s1 * w > MAX_STATE) then return CORRUPT, 0, 0, 0 end
  if s1 and now < s5 then
    local a, b, c = s1, s2, s3
    if b > limit then b = limit end
    if c > limit then c = limit end
    fresh = s5
    if w ~= W then
      -- One statement each: gopher-lua (miniredis) assigns a multiple
      -- assignment's targets while still evaluating its values.
      c = math.min(b + c, limit)
      b = 0
      a = idiv(a * w, W)
    end
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

  -- A refund takes n back from the current window, then from the previous
  -- one (never below zero), then reports as a Peek would.
  local refunded = false
  if refund then
    refunded = prev + curr > 0
    local back = math.min(n, curr)
    curr = curr - back
    prev = math.max(prev - (n - back), 0)
    n, peek = 1, true
  end

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
      local es = W - idiv((K - curr) * W - 1, prev)
      if es < W then at = start + es end
    end
    -- The next window: prev becomes curr, curr becomes 0.
    if at < 0 then
      if curr == 0 then
        at = start + W
      else
        local es = W - idiv(K * W - 1, curr)
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
  local writes = allowed == 1 and not peek
  if fresh and not writes then
    retry, reset = math.min(retry, fresh - now), math.min(reset, fresh - now)
  end
  local write
  if writes or refunded then
    write = state(wn, prev, curr, W, now + reset)
  end

  -- Remaining: how many requests of cost 1 would pass now.
  local remaining = 0
  local d = limit * W - curr * W - prev * (W - e)
  if d > 0 then remaining = idiv(d + W - 1, W) end
  return allowed, remaining, retry, reset, write, reset
end
