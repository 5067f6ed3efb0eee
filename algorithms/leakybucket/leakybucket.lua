-- ratekit leaky bucket (policing): the step. twin.go makes the same
-- decision in Go; internal/engine composes the scripts that call it.
--
-- key      the bucket: the state (prelude) level, last_leak_us, per_us,
--          fresh_at_us, or absent (empty). fresh_at_us is when the bucket is empty again.
--          level is scaled by per_us, so that a leak of rate units per
--          per_us drains exactly rate scaled units every microsecond.
-- capacity, leak_rate, per_us: the parameters
-- returns  allowed, remaining, retry_after_us, reset_after_us, and the
--          new state's value and TTL in µs (nil when nothing is written)
--
-- A key's time never runs backwards: with the clock behind last_leak_us,
-- the bucket is decided as at last_leak_us and the waits count the
-- difference (an empty bucket has no reset to wait for). State written
-- under another configuration keeps its level in whole units (a partly
-- drained unit counts whole when Per changed), at
-- most a full bucket under this one, and is empty from its fresh_at_us on,
-- so it never outlives the TTL it was written with.
local function leakybucket(key, now, client_clock, n, mode, capacity, leak_rate, per_us)
  local rate, per = leak_rate, per_us
  local peek, refund = mode == MODE_PEEK, mode == MODE_REFUND

  local full = capacity * per
  local level, t, fresh = 0, now, nil
  local s1, last, old_per, s4 = read_state(key, 4)
  if s1 == false then return CORRUPT, 0, 0, 0 end
  if s1 and old_per < 1 then return CORRUPT, 0, 0, 0 end
  if s1 and now < s4 and last < s4 then
    fresh = s4
    level = s1
    if old_per ~= per then
      level = math.min(idiv(level + old_per - 1, old_per), capacity) * per
    end
    if level > full then level = full end
    if last > t then t = last end
    -- Drain since the last leak, never below empty.
    if level > 0 then
      local elapsed = t - last
      if elapsed >= idiv(level + rate - 1, rate) then
        level = 0
      else
        level = level - elapsed * rate
      end
    end
  end

  -- A refund drains n units at once (never below empty), then reports as
  -- a Peek would.
  local refunded = false
  if refund then
    refunded = level > 0
    level = math.max(level - n * per, 0)
    n, peek = 1, true
  end

  local add = n * per
  local allowed = 0
  if level + add <= full then
    allowed = 1
    if not peek then level = level + add end
  end
  local behind = t - now
  local retry = 0
  if allowed == 0 then retry = behind + idiv(level + add - full + rate - 1, rate) end
  -- An empty bucket is reset already, even with the clock behind.
  local reset = 0
  if level > 0 then reset = behind + idiv(level + rate - 1, rate) end
  local writes = allowed == 1 and not peek
  if fresh and not writes then
    retry, reset = math.min(retry, fresh - now), math.min(reset, fresh - now)
  end
  if writes or refunded then
    return allowed, idiv(full - level, per), retry, reset, state(level, t, per, now + reset), reset
  end
  return allowed, idiv(full - level, per), retry, reset
end
