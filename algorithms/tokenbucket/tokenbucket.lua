-- ratekit token bucket: the step. twin.go makes the same decision in Go,
-- step by step; internal/engine composes the scripts that call it.
--
-- key      the bucket: the state (prelude) tokens, last_refill_us,
--          fresh_at_us, capacity_w, or absent (full). fresh_at_us is when the bucket is full again, the
--          moment from which the state decides like an absent key;
--          capacity_w the Capacity that wrote it (an earlier ratekit
--          wrote the first three alone).
-- capacity, refill_rate, refill_interval_us, carry: the parameters
-- returns  allowed, tokens_left, retry_after_us, reset_after_us, and the
--          new state's value and TTL in µs (nil when nothing is written)
--
-- Integers only, all below 2^53: a double computes them exactly.
--
-- State written under another Capacity carries what it used (carry 0:
-- CARRY_USED) or what it had left (1: CARRY_AVAILABLE) over, at most
-- Capacity; it keeps its refill phase, and still counts as full from its
-- fresh_at_us on, so it never outlives the TTL it was written with.
local function tokenbucket(key, now, client_clock, n, mode, capacity, refill_rate, refill_interval_us, carry)
  local cap, rate, interval = capacity, refill_rate, refill_interval_us
  local peek, refund = mode == MODE_PEEK, mode == MODE_REFUND

  local tokens, last, fresh = cap, now, nil
  local s1, s2, s3, s4 = read_state(key, 4, 3)
  if s1 == false or (s4 and (s4 < 1 or s1 > s4)) then return CORRUPT, 0, 0, 0 end
  if s1 and now < s3 then
    tokens, last, fresh = s1, s2, s3
    if s4 and s4 ~= cap and carry == CARRY_USED then
      tokens = tokens + cap - s4
      if tokens < 0 then tokens = 0 end
    end
    if tokens > cap then tokens = cap end
  end

  -- Whole refill intervals since last_refill, as in the seed. A clock behind
  -- last_refill refills nothing: the wait below then counts the difference.
  if tokens < cap and now > last then
    local refills = idiv(now - last, interval)
    if refills > 0 then
      local to_full = idiv(cap - tokens + rate - 1, rate)
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
  -- A refund puts n tokens back (never above Capacity), then reports as a
  -- Peek would.
  if refund then
    tokens = math.min(tokens + n, cap)
    if tokens >= cap then last = now end
    n, peek = 1, true
  end

  local allowed = 0
  if tokens >= n then
    allowed = 1
    if not peek then tokens = tokens - n end
  end
  local retry = 0
  if allowed == 0 then
    retry = last + idiv(n - tokens + rate - 1, rate) * interval - now
    if fresh and retry > fresh - now then retry = fresh - now end
  end
  local reset = 0
  if tokens < cap then
    reset = last + idiv(cap - tokens + rate - 1, rate) * interval - now
    if fresh and (allowed == 0 or peek) and reset > fresh - now then reset = fresh - now end
  end
  if (allowed == 1 and not peek) or (refund and fresh) then
    return allowed, tokens, retry, reset, state(tokens, last, now + reset, cap), reset
  end
  return allowed, tokens, retry, reset
end
