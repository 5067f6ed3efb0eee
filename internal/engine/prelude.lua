-- ratekit prelude (internal/engine/prelude.lua): what every algorithm's step
-- shares, at the top of every composed script. The Go side of each function
-- lives in internal/params. A step that refuses its key's state returns
-- -1, 0, 0, 0 (params.CorruptReply).

-- MAX_STATE is params.MaxState (2^52 + 2^51): no stored integer is larger.
local MAX_STATE = 6755399441055744

-- clock(now) returns the decision's time in µs and whether it came from
-- the client: now >= 0 is the limiter's clock, -1 asks for the server's TIME.
local function clock(now)
  if now >= 0 then return now, true end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2]), false
end

-- read_state(key, n) returns the n integers stored at key as "a:b:...",
-- nil when the key is absent, and false when it holds anything else: another
-- type, another shape, or a number beyond MAX_STATE (params.State).
-- One pattern per count: one string.match reads the whole value, where a
-- loop of string.find and string.sub per integer cost the server more
-- (redis-benchmark, INFO commandstats usec_per_call).
local STATE_PATTERN = {'^(%d+)$', '^(%d+):(%d+)$', '^(%d+):(%d+):(%d+)$', '^(%d+):(%d+):(%d+):(%d+)$',
  '^(%d+):(%d+):(%d+):(%d+):(%d+)$', '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$'}
local function read_state(key, n)
  local s = redis.pcall('GET', key)
  if not s then return nil end
  if type(s) ~= 'string' then return false end
  local out = {string.match(s, STATE_PATTERN[n])}
  if #out ~= n then return false end
  for k = 1, n do
    local d = out[k]
    if #d > 16 then return false end
    local v = tonumber(d)
    if v > MAX_STATE then return false end
    out[k] = v
  end
  return out
end

-- ttl_ms(reset_us, client_clock) is params.TTL: the key's time to live in
-- whole milliseconds, at least 1, plus a minute of slack when the time came
-- from the client (the TTL runs on the server's clock).
local function ttl_ms(reset, client_clock)
  local ttl = math.floor((reset + 999) / 1000)
  if ttl < 1 then ttl = 1 end
  if client_clock then ttl = ttl + 60000 end
  return string.format('%d', ttl)
end

-- write_state(key, state, reset_us, client_clock) stores the integers of
-- state as "a:b:..." with ttl_ms(reset_us, client_clock).
local STATE_FORMAT = {'%d', '%d:%d', '%d:%d:%d', '%d:%d:%d:%d', '%d:%d:%d:%d:%d', '%d:%d:%d:%d:%d:%d'}
local function write_state(key, state, reset, client_clock)
  redis.call('SET', key, string.format(STATE_FORMAT[#state], unpack(state)), 'PX', ttl_ms(reset, client_clock))
end

