-- ratekit GCRA (generic cell rate algorithm): the step. twin.go makes the
-- same decision in Go; internal/engine composes the scripts that call it.
--
-- key      the theoretical arrival time (TAT): the state (prelude)
--          tat_us, frac, rate_w, written_us, period_w, burst_w: the time
--          tat_us + frac/rate_w µs, the time of the write, and the
--          configuration that wrote it (an earlier ratekit wrote the
--          first four alone); or absent. One GET, one SET with TTL.
-- mode     0: allow n, 1: peek for n, 2: allow at most n
-- rate, period_us, burst, carry: the parameters
-- returns  allowed (mode 2: units granted), remaining, retry_after_us,
--          reset_after_us, and the new state's value and TTL in µs (nil
--          when nothing is written)
--
-- Times are scaled by rate, so the emission interval period/rate is exactly
-- period scaled units, and x = (TAT - t) * rate stays small: x / period is
-- the units the key has used.
--
-- A key's time never runs backwards: with the clock behind written_us,
-- the key is decided as at written_us and the waits count the difference.
-- State written under another Rate or Period (or Burst, with carry
-- CARRY_AVAILABLE) carries what it used at its write (carry CARRY_USED)
-- or what it had left then over, in whole units, at most Burst, and
-- drains at this configuration's rate from then on: a partly used unit
-- counts as used, unless this configuration is at least as fast and as
-- large as the writer's in every parameter, when it counts as unused (so
-- a raised limit never denies what the old one allowed, and a lowered one
-- never allows what it denied). From the writer's TAT on, such state is a
-- fresh key, as its TTL says. State from an earlier ratekit, and state under
-- another Burst alone, keep their TAT, at most a full burst ahead of
-- their write.
local function gcra(key, now, client_clock, n, mode, rate, period_us, burst, carry)
  local period = period_us

  local cap = burst * period
  local x, t, fresh = 0, now, nil
  local tat, frac, old_rate, written, old_period, old_burst = read_state(key, 6, 4)
  if tat == false then return CORRUPT, 0, 0, 0 end
  if tat then
    if frac >= old_rate or tat < written then return CORRUPT, 0, 0, 0 end
    if old_period and (old_period < 1 or old_burst < 1 or old_rate < 1 or old_burst > idiv(MAX_COUNT, old_period)
        or tat - written > idiv(old_burst * old_period, old_rate)) then
      return CORRUPT, 0, 0, 0
    end
    if written > t then t = written end
    if old_period and (old_rate ~= rate or old_period ~= period or (old_burst ~= burst and carry == CARRY_AVAILABLE)) then
      local ends = tat
      if frac > 0 then ends = tat + 1 end
      if t < ends then
        -- Converted as of its write, then drained at this configuration's
        -- rate: every read of the same state converts it alike.
        fresh = ends
        local xw = (tat - written) * old_rate + frac
        -- A partly drained request counts as drained for a configuration
        -- at least as fast and as large as the writer's, as not otherwise.
        local up = rate >= old_rate and period <= old_period and burst >= old_burst
        local units
        if carry == CARRY_USED then
          if up then
            units = idiv(xw, old_period)
          else
            units = idiv(xw + old_period - 1, old_period)
          end
        else
          local left = old_burst * old_period - xw
          if up then
            left = idiv(left + old_period - 1, old_period)
          else
            left = idiv(left, old_period)
          end
          if left > burst then left = burst end
          units = burst - left
        end
        if units > burst then units = burst end
        local x0 = units * period
        tat, frac = written + idiv(x0, rate), x0 % rate
        if tat >= t then x = (tat - t) * rate + frac end
      end
    else
      if not old_period and old_rate ~= rate and frac > 0 then tat, frac = tat + 1, 0 end
      -- At its write the state was at most a full burst ahead under this
      -- configuration: (tat - written) * rate + frac <= cap.
      if tat - written > idiv(cap, rate) or (tat - written) * rate + frac > cap then
        tat, frac = written + idiv(cap, rate), cap % rate
      end
      if tat >= t then x = (tat - t) * rate + frac end
    end
  end

  -- A refund takes n emission intervals off the arrival time (never before
  -- t), then reports as a Peek would.
  local refunded = false
  if mode == MODE_REFUND then
    refunded = x > 0
    x = math.max(x - n * period, 0)
    n, mode = 1, MODE_PEEK
  end

  local avail = idiv(cap - x, period)
  local m = n
  if mode == MODE_AT_MOST and avail < n then m = avail end
  if m < 1 then m = 1 end
  local allowed = 0
  if x + m * period <= cap then allowed = 1 end

  local behind = t - now
  local retry = 0
  if allowed == 0 then retry = behind + idiv(x + m * period - cap + rate - 1, rate) end
  if allowed == 1 and mode ~= MODE_PEEK then x = x + m * period end
  local reset = behind + idiv(x + rate - 1, rate)
  local write
  if (allowed == 1 and mode ~= MODE_PEEK) or refunded then
    write = state(t + idiv(x, rate), x % rate, rate, t, period, burst)
    avail = idiv(cap - x, period)
  elseif fresh then
    -- From the writer's TAT on, the key is fresh.
    if retry > fresh - now then retry = fresh - now end
    if reset > fresh - now then reset = fresh - now end
  end
  if mode == MODE_AT_MOST and allowed == 1 then allowed = m end
  return allowed, avail, retry, reset, write, reset
end
