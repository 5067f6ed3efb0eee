-- ratekit prelude (internal/engine/prelude.lua): what every algorithm's step
-- shares, at the top of every composed script. The Go side of each function
-- lives in internal/params. A step that refuses its key's state returns
-- -1, 0, 0, 0 (params.CorruptReply).
--
-- What a script costs the server is mostly what its Lua does per call, and
-- Redis runs this whole chunk again at every call: each closure made here
-- and each table is built anew, and each call of a library function (a C
-- function: tonumber, math.floor, string.format) costs far more than the
-- arithmetic around it (cachegrind on redis-server: about 1,000 instructions
-- for tonumber, 500 for math.floor, 2,000 for a table of six strings;
-- docs/design.md, "What a script costs"). So the helpers below take no
-- upvalues, numbers come from strings by arithmetic coercion (x + 0) once a
-- pattern has checked them, and floors of quotients are idiv.

-- MAX_STATE is params.MaxState (2^52 + 2^51): no stored integer is larger.
local MAX_STATE = 6755399441055744

-- clock(now) returns the decision's time in µs and whether it came from
-- the client: now >= 0 is the limiter's clock, -1 asks for the server's TIME.
local function clock(now)
  if now >= 0 then return now, true end
  local t = redis.call('TIME')
  return t[1] * 1000000 + t[2], false
end

-- idiv(a, b) is math.floor(a / b) for b > 0, exactly as math.floor computes
-- it (a - a % b is floor(a / b) * b), without calling a library function.
local function idiv(a, b)
  return (a - a % b) / b
end

-- read_state(key, n) returns the n integers stored at key as "a:b:...",
-- nothing (nil) when the key is absent, and false when it holds anything
-- else: another type, another shape, or an integer of more than 16 digits
-- or beyond MAX_STATE (params.State).
-- One pattern per count reads the whole value into locals, without a table.
local function read_state(key, n)
  local s = redis.pcall('GET', key)
  if not s then return nil end
  if type(s) ~= 'string' then return false end
  local pattern
  if n == 3 then
    pattern = '^(%d+):(%d+):(%d+)$'
  elseif n == 4 then
    pattern = '^(%d+):(%d+):(%d+):(%d+)$'
  elseif n == 5 then
    pattern = '^(%d+):(%d+):(%d+):(%d+):(%d+)$'
  elseif n == 1 then
    pattern = '^(%d+)$'
  elseif n == 2 then
    pattern = '^(%d+):(%d+)$'
  else
    pattern = '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$'
  end
  local a, b, c, d, e, f = string.match(s, pattern)
  if a == nil then return false end
  -- Unrolled: a loop would need a table, a helper one call per integer.
  if #a > 16 then return false end
  a = a + 0
  if a > MAX_STATE then return false end
  if b then
    if #b > 16 then return false end
    b = b + 0
    if b > MAX_STATE then return false end
  end
  if c then
    if #c > 16 then return false end
    c = c + 0
    if c > MAX_STATE then return false end
  end
  if d then
    if #d > 16 then return false end
    d = d + 0
    if d > MAX_STATE then return false end
  end
  if e then
    if #e > 16 then return false end
    e = e + 0
    if e > MAX_STATE then return false end
  end
  if f then
    if #f > 16 then return false end
    f = f + 0
    if f > MAX_STATE then return false end
  end
  return a, b, c, d, e, f
end

-- ttl_ms(reset_us, client_clock) is params.TTL: the key's time to live in
-- whole milliseconds, at least 1, plus a minute of slack when the time came
-- from the client (the TTL runs on the server's clock). It is a number:
-- redis.call writes an integer below 2^53 exactly.
local function ttl_ms(reset, client_clock)
  local ttl = (reset + 999 - (reset + 999) % 1000) / 1000
  if ttl < 1 then ttl = 1 end
  if client_clock then ttl = ttl + 60000 end
  return ttl
end

-- commit(key, value, ttl_us, client_clock, write) runs what a step returned
-- as its write: a string value is the key's new value, set with
-- ttl_ms(ttl_us); a false value deletes the key; a function write writes
-- what the step staged in it (a sorted set's members).
local function commit(key, value, ttl, client_clock, write)
  if value then
    redis.call('SET', key, value, 'PX', ttl_ms(ttl, client_clock))
  elseif value == false then
    redis.call('DEL', key)
  end
  if write then write() end
end
