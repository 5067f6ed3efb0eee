-- ratekit leaky bucket (policing): the step. twin.go makes the same
-- decision in Go; internal/engine composes the scripts that call it.
--
-- key      the bucket: the state (prelude) level, last_leak_us, per_us,
--          fresh_at_us, capacity_w, leak_rate_w, or absent (empty).
--          fresh_at_us is when the bucket is empty again. level is scaled
--          by per_us, so that a leak of rate units per per_us drains
--          exactly rate scaled units every microsecond. capacity_w and
--          leak_rate_w are the configuration that wrote it (an earlier
--          ratekit wrote the first four alone).
-- capacity, leak_rate, per_us, carry: the parameters
-- returns  allowed, remaining, retry_after_us, reset_after_us, and the
--          new state's value and TTL in µs (nil when nothing is written)
--
-- A key's time never runs backwards: with the clock behind last_leak_us,
-- the bucket is decided as at last_leak_us and the waits count the
-- difference (an empty bucket has no reset to wait for). State written
-- under another configuration carries what it used (carry CARRY_USED: its
-- level) or what it had left (CARRY_AVAILABLE: its room), at most a full
-- bucket under this one; where Per changed, in whole units: a partly
-- drained unit counts as drained when this configuration is at least as
-- large and as fast as the writer's in every parameter, as not drained
-- otherwise. It drains at this configuration's rate, and is empty from
-- its fresh_at_us on, so it never outlives the TTL it was written with.
local function leakybucket(key, now, client_clock, n, mode, capacity, leak_rate, per_us, carry)
  local rate, per = leak_rate, per_us
  local peek, refund = mode == MODE_PEEK, mode == MODE_REFUND

  local full = capacity * per
  local level, t, fresh = 0, now, nil
  local s1, last, old_per, s4, old_cap, old_rate = read_state(key, 6, 4)
  if s1 == false then return CORRUPT, 0, 0, 0 end
  if s1 and (old_per < 1 or (old_cap and (old_cap < 1 or old_rate < 1 or old_cap > idiv(MAX_SPAN, old_per) or s1 > old_cap * old_per))) then
    return CORRUPT, 0, 0, 0
  end
  if s1 and now < s4 and last < s4 then
    fresh = s4
    level = s1
    if not old_cap then
      if old_per ~= per then
        level = math.min(idiv(level + old_per - 1, old_per), capacity) * per
      end
    else
      -- A partly drained unit counts as drained for a configuration at
      -- least as large and as fast as the writer's, as not otherwise.
      local up = capacity >= old_cap and rate >= old_rate and per <= old_per
      if carry == CARRY_AVAILABLE and (old_per ~= per or old_cap ~= capacity) then
        local room = old_cap * old_per - level
        if up then room = idiv(room + old_per - 1, old_per) else room = idiv(room, old_per) end
        if room > capacity then room = capacity end
        level = (capacity - room) * per
      elseif old_per ~= per then
        if up then
          level = math.min(idiv(level, old_per), capacity) * per
        else
          level = math.min(idiv(level + old_per - 1, old_per), capacity) * per
        end
      end
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
    return allowed, idiv(full - level, per), retry, reset, state(level, t, per, now + reset, capacity, rate), reset
  end
  return allowed, idiv(full - level, per), retry, reset
end
