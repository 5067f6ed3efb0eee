-- ratekit GCRA (generic cell rate algorithm): the step. twin.go makes the
-- same decision in Go; internal/engine composes the scripts that call it.
--
-- key      the theoretical arrival time (TAT): the state (prelude)
--          tat_us, frac, rate, written_us: the time tat_us + frac/rate µs,
--          and the time of the write; or absent. One GET, one SET with TTL.
-- mode     0: allow n, 1: peek for n, 2: allow at most n
-- rate, period_us, burst: the parameters
-- returns  allowed (mode 2: units granted), remaining, retry_after_us,
--          reset_after_us, and the new state's value and TTL in µs (nil
--          when nothing is written)
--
-- Times are scaled by rate, so the emission interval period/rate is exactly
-- period scaled units, and x = (TAT - t) * rate stays small.
--
-- A key's time never runs backwards: with the clock behind written_us,
-- the key is decided as at written_us and the waits count the difference.
-- State written under another configuration is held to a full burst ahead
-- of its write under this one, and its fraction of a microsecond is rounded
-- up when Rate changed.
local function gcra(key, now, client_clock, n, mode, rate, period_us, burst)
  local period = period_us

  local cap = burst * period
  local x, t = 0, now
  local tat, frac, old_rate, written = read_state(key, 4)
  if tat == false then return CORRUPT, 0, 0, 0 end
  if tat then
    if frac >= old_rate or tat < written then return CORRUPT, 0, 0, 0 end
    if old_rate ~= rate and frac > 0 then tat, frac = tat + 1, 0 end
    if written > t then t = written end
    -- At its write the state was at most a full burst ahead under this
    -- configuration: (tat - written) * rate + frac <= cap.
    if tat - written > idiv(cap, rate) or (tat - written) * rate + frac > cap then
      tat, frac = written + idiv(cap, rate), cap % rate
    end
    if tat >= t then x = (tat - t) * rate + frac end
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
    write = state(t + idiv(x, rate), x % rate, rate, t)
    avail = idiv(cap - x, period)
  end
  if mode == MODE_AT_MOST and allowed == 1 then allowed = m end
  return allowed, avail, retry, reset, write, reset
end
