-- ratekit sliding window counter: the step. twin.go makes the same decision
-- in Go; internal/engine composes the scripts that call it.
--
-- key      both windows in one state (prelude): window_number, previous,
--          current, window_us, fresh_at_us; or absent. Windows are aligned to the epoch, as in the guide;
--          fresh_at_us is when both counts have left the estimate.
-- limit, window_us: the parameters
-- returns  allowed, remaining, retry_after_us, reset_after_us, and the
--          new state's value and TTL in µs (nil when nothing is written;
--          a TTL of false keeps the key's)
--
-- The guide's estimate prev * (1 - elapsed) + curr, in exact integers:
-- with e = now - window start, a request of cost n passes when
--   prev * (W - e) + curr * W < (limit - n + 1) * W
-- (for n = 1: estimate < limit, the guide's test).
--
-- State written under another configuration: counts above Limit are
-- counted as Limit. Under another Window it is read two ways: under its
-- own windows, and with both counts moved into this Window's window that
-- holds its current window's start; a shorter Window (a raise) allows
-- what either allows, a longer one what both allow, so a raise never
-- denies what the old Window allowed and a lowering never allows what it
-- denied. A write stores the second. From its fresh_at_us on the state
-- counts as absent, so it never outlives the TTL it was written with.
--
-- Every write's TTL ends at its fresh_at_us: a write that keeps the
-- stored fresh_at_us (a request in the same window) keeps the key's TTL
-- (SET ... KEEPTTL), the same expiry for a fraction of the server's work.
-- twin.go sets the TTL it computes, which ends at the same instant.
local function slidingcounter(key, now, client_clock, n, mode, limit, window_us)
  local peek, refund = mode == MODE_PEEK, mode == MODE_REFUND

  local a, b, c, w, fresh = nil, 0, 0, window_us, nil
  local s1, s2, s3, s4, s5 = read_state(key, 5)
  if s1 == false then return CORRUPT, 0, 0, 0 end
  if s1 and (s4 < 1 or s1 * s4 > MAX_STATE) then return CORRUPT, 0, 0, 0 end
  if s1 and now < s5 then
    a, b, c, w, fresh = s1, s2, s3, s4, s5
    if b > limit then b = limit end
    if c > limit then c = limit end
  end

  -- Geometry 1 is the state's own Window; 2, when another Window wrote
  -- it, this one's. The loop leaves the last one's in these locals.
  local last, any = 1, window_us < w
  if w ~= window_us then last = 2 end
  local allowed, retry, reset, remaining, refunded, added, last_ok, last_retry
  local W, wn, prev, curr, start, e, m
  for g = 1, last do
    W = w
    if g == 2 then W = window_us end
    wn = idiv(now, W)
    prev, curr = 0, 0
    if a then
      local x, y, z = a, b, c
      if g == 2 then
        -- One statement each: gopher-lua (miniredis) assigns a multiple
        -- assignment's targets while still evaluating its values.
        z = math.min(b + c, limit)
        y = 0
        x = idiv(a * w, W)
      end
      if x == wn then
        prev, curr = y, z
      elseif x == wn - 1 then
        prev = z
      elseif x > wn then
        -- The clock went back: decide as at the start of the newest window.
        wn, prev, curr = x, y, z
      end
    end
    start = wn * W
    e = now - start
    if e < 0 then e = 0 end

    -- A refund takes n back from the current window, then from the
    -- previous one (never below zero), then reports as a Peek would.
    m = n
    local pk, rf = peek, false
    if refund then
      rf = prev + curr > 0
      local back = math.min(m, curr)
      curr = curr - back
      prev = math.max(prev - (m - back), 0)
      m, pk = 1, true
    end

    local K = limit - m + 1
    local ok, rt = 0, 0
    if prev * (W - e) + curr * W < K * W then
      ok = 1
      if not pk then curr = curr + m end
    else
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
      rt = at - now
    end
    local rs = 0
    if curr > 0 then
      rs = start + 2 * W - now
    elseif prev > 0 then
      rs = start + W - now
    end
    local rem = 0
    local d = limit * W - curr * W - prev * (W - e)
    if d > 0 then rem = idiv(d + W - 1, W) end

    if g == 1 then
      allowed, retry, reset, remaining = ok, rt, rs, rem
    elseif any then
      if ok == 1 or allowed == 1 then allowed, retry = 1, 0 else retry = math.min(retry, rt) end
      reset, remaining = math.min(reset, rs), math.max(remaining, rem)
    else
      if ok == 0 or allowed == 0 then allowed, retry = 0, math.max(retry, rt) end
      reset, remaining = math.max(reset, rs), math.min(remaining, rem)
    end
    refunded, added, last_ok, last_retry = rf, ok == 1, ok, rt
  end

  local writes = allowed == 1 and not peek
  local write
  if writes or refunded then
    -- The last geometry's state, with this request counted: what a Peek
    -- reads after it (a refund's reply is that Peek).
    if writes and not added then curr = curr + m end
    if refunded then allowed, retry = last_ok, last_retry end
    reset = 0
    if curr > 0 then
      reset = start + 2 * W - now
    elseif prev > 0 then
      reset = start + W - now
    end
    remaining = 0
    local d = limit * W - curr * W - prev * (W - e)
    if d > 0 then remaining = idiv(d + W - 1, W) end
    write = state(wn, prev, curr, W, now + reset)
  elseif fresh then
    retry, reset = math.min(retry, fresh - now), math.min(reset, fresh - now)
  end
  local ttl = reset
  if write and fresh == now + reset then ttl = false end
  return allowed, remaining, retry, reset, write, ttl
end
