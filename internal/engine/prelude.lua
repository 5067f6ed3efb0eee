-- ratekit prelude (internal/engine/prelude.lua): what every algorithm's step
-- shares, at the top of every composed script. The Go side of each function
-- lives in internal/params. A step that refuses its key's state returns
-- CORRUPT, 0, 0, 0 (params.CorruptReply).
--
-- Names in capitals (MAX_STATE, CLOCK_SLACK_MS, CORRUPT, MODE_ALLOW,
-- MODE_PEEK, ...) are constants the Go composer replaces by their values
-- (internal/engine/prelude.go, luaConstants): each has one home, in Go.
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

-- clock(now) returns the decision's time in µs and whether it came from
-- the client: now >= 0 is the limiter's clock, -1 asks for the server's TIME.
-- A script that reads TIME may write after it only when it replicates its
-- effects rather than itself: Redis 3.2-6.2 ask for that with
-- redis.replicate_commands() (the default from 5.0, unless the server runs
-- with lua-replicate-commands no); 7.0 and later always do, and keep the
-- function as a no-op; a server older than 3.2 has none. (Its cost:
-- docs/design.md, "What a script costs".)
local function clock(now)
  if now >= 0 then return now, true end
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  return t[1] * 1000000 + t[2], false
end

-- idiv(a, b) is math.floor(a / b) for b > 0, exactly as math.floor computes
-- it (a - a % b is floor(a / b) * b), without calling a library function.
local function idiv(a, b)
  return (a - a % b) / b
end

-- A key's state is n integers (at most six). Where the server has the
-- struct library (Redis, Valkey) it is stored packed: the byte 255, then
-- the integers as big-endian doubles (exact below 2^53), which struct
-- reads and writes in one call each; elsewhere (miniredis has no struct)
-- as decimal text "a:b:...". Parsing and formatting the text cost the
-- server about a fifth of a decision (docs/design.md, "What a script
-- costs"). Both forms are read on every server: no decimal state begins
-- with the byte 255, and state written as text before stays readable.
-- struct is found at the first call that needs it, not here: a function
-- library's top level reads no global (Redis gives it none but redis),
-- and a library keeps it from call to call (false where there is none;
-- rawget: both Redis and miniredis refuse to read a missing global).
local struct

-- read_state(key, n) returns the n integers stored at key, nothing (nil)
-- when the key is absent, and false when it holds anything else: another
-- type, another shape, a number that is not an integer in [0, MAX_STATE],
-- or text with an integer of more than 16 digits (params.State).
-- One format per count reads the whole value into locals, without a table.
-- read_state(key, n, m) also reads a state of m < n integers (the shape
-- an earlier ratekit stored), returning nil in the places past m.
local function read_state(key, n, m)
  if struct == nil then struct = rawget(_G, 'struct') or false end
  local s = redis.pcall('GET', key)
  if not s then return nil end
  if type(s) ~= 'string' then return false end
  if m and #s ~= 8 * n + 1 then
    local _, colons = string.gsub(s, ':', ':')
    if (#s == 8 * m + 1 and string.byte(s, 1) == 255) or colons == m - 1 then n = m end
  end
  local packed, pattern
  if n == 3 then
    packed, pattern = '>Bddd', '^(%d+):(%d+):(%d+)$'
  elseif n == 4 then
    packed, pattern = '>Bdddd', '^(%d+):(%d+):(%d+):(%d+)$'
  elseif n == 5 then
    packed, pattern = '>Bddddd', '^(%d+):(%d+):(%d+):(%d+):(%d+)$'
  elseif n == 1 then
    packed, pattern = '>Bd', '^(%d+)$'
  elseif n == 2 then
    packed, pattern = '>Bdd', '^(%d+):(%d+)$'
  else
    packed, pattern = '>Bdddddd', '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$'
  end
  local tag, a, b, c, d, e, f
  if struct and #s == 8 * n + 1 then
    -- struct.unpack also returns the position after the last value: the
    -- locals past the n-th are cleared. NaN fails every comparison.
    tag, a, b, c, d, e, f = struct.unpack(packed, s)
    if tag == 255 then
      if n < 6 then f = nil end
      if n < 5 then e = nil end
      if n < 4 then d = nil end
      if n < 3 then c = nil end
      if n < 2 then b = nil end
      if not (a >= 0 and a <= MAX_STATE and a % 1 == 0) then return false end
      if b and not (b >= 0 and b <= MAX_STATE and b % 1 == 0) then return false end
      if c and not (c >= 0 and c <= MAX_STATE and c % 1 == 0) then return false end
      if d and not (d >= 0 and d <= MAX_STATE and d % 1 == 0) then return false end
      if e and not (e >= 0 and e <= MAX_STATE and e % 1 == 0) then return false end
      if f and not (f >= 0 and f <= MAX_STATE and f % 1 == 0) then return false end
      return a, b, c, d, e, f
    end
  end
  a, b, c, d, e, f = string.match(s, pattern)
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

-- state(a, ...) returns the value that stores the integers a, b, ... (one
-- to six, each in [0, MAX_STATE]) as read_state reads them: packed where
-- the server has struct, as text elsewhere.
local function state(a, b, c, d, e, f)
  if struct == nil then struct = rawget(_G, 'struct') or false end
  if struct then
    if f then return struct.pack('>Bdddddd', 255, a, b, c, d, e, f) end
    if e then return struct.pack('>Bddddd', 255, a, b, c, d, e) end
    if d then return struct.pack('>Bdddd', 255, a, b, c, d) end
    if c then return struct.pack('>Bddd', 255, a, b, c) end
    if b then return struct.pack('>Bdd', 255, a, b) end
    return struct.pack('>Bd', 255, a)
  end
  if f then return string.format('%d:%d:%d:%d:%d:%d', a, b, c, d, e, f) end
  if e then return string.format('%d:%d:%d:%d:%d', a, b, c, d, e) end
  if d then return string.format('%d:%d:%d:%d', a, b, c, d) end
  if c then return string.format('%d:%d:%d', a, b, c) end
  if b then return string.format('%d:%d', a, b) end
  return string.format('%d', a)
end

-- ttl_ms(reset_us, client_clock) is params.TTL: the key's time to live in
-- whole milliseconds, at least 1, plus CLOCK_SLACK_MS of slack when the
-- time came from the client (the TTL runs on the server's clock). It is a number:
-- redis.call writes an integer below 2^53 exactly.
local function ttl_ms(reset, client_clock)
  local ttl = (reset + 999 - (reset + 999) % 1000) / 1000
  if ttl < 1 then ttl = 1 end
  if client_clock then ttl = ttl + CLOCK_SLACK_MS end
  return ttl
end

-- commit(key, value, ttl_us, client_clock, write) runs what a step returned
-- as its write: a string value is the key's new value, set with
-- ttl_ms(ttl_us), or keeping the key's TTL when ttl_us is false (a step
-- whose key's expiry has not moved: SET ... KEEPTTL costs the server a
-- fraction of PX, docs/design.md "What a script costs"); a false value
-- deletes the key; a function write writes what the step staged in it (a
-- sorted set's members).
local function commit(key, value, ttl, client_clock, write)
  if value then
    if ttl then
      redis.call('SET', key, value, 'PX', ttl_ms(ttl, client_clock))
    else
      redis.call('SET', key, value, 'KEEPTTL')
    end
  elseif value == false then
    redis.call('DEL', key)
  end
  if write then write() end
end
