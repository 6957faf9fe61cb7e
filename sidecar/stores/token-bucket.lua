-- Token bucket check-and-take for a batch of takes in one atomic call: the Lua twin of takeAllUs()
-- in sidecar/bucket.ts (same operations, same order, so both give identical results; a test holds
-- them to it). The store batches the takes that arrive in one event-loop turn into one call
-- (sidecar/stores/redis.ts): the takes run in order, so two takes of one bucket in a batch see
-- each other exactly as two separate calls would.
--
-- A take charges one or more buckets (several limits on one request): it is admitted only when
-- every bucket holds its cost, and then every one is charged; a refused take charges none and
-- writes nothing (bucket.ts, "What a store keeps": the exact refill of the stored state gives the
-- same later decisions, and the TTL set by the last write still means a full bucket).
--
-- Storage: one string key per bucket holding 16 bytes, two little-endian signed 64-bit integers:
-- micro-tokens, then the µs time of that state. Read with GET, written with one SET ... PX (TTL =
-- refill-from-empty time x 2, at least 1 s: an expired key is a full bucket). So a take costs
-- GET + SET per bucket when admitted and GET alone when refused (the hash buckets of the
-- unversioned keys cost HMGET, HSET and PEXPIRE on every take), and the binary form spares Lua the
-- decimal parsing of two 16-digit numbers per bucket (docs/adr/0014); bench/results/redis-cost.md
-- has the measured cost. A value of any other length (none is written but by this script) counts
-- as a full bucket.
--
-- KEYS             the bucket keys of every take, take after take ("<prefix>v2:{<key>}", then
--                  "<prefix>v2:{<key>}:<i>" for its further buckets: sidecar/stores/redis.ts keyOf)
-- ARGV[1]          now in µs, or '' to use Redis TIME (the default: every sidecar shares one clock)
-- then per take    n (its number of buckets), then 4 arguments per bucket: replenishRate (tokens
--                  per second, integer >= 1), burstCapacity (tokens, integer >= 1), cost of this
--                  request (tokens, 0..burstCapacity), key TTL in ms (SET ... PX when written)
--
-- Reply: ONE string of space-separated integers, per take: allowed (1|0), then per bucket the
-- micro-tokens it holds after the decision (refilled to the decision's time, charged when
-- admitted) and the µs time of the decision (now, or the stored state's time when the clock is
-- behind it). The client derives Retry-After and reset from those with the rule (bucket.ts
-- toDecision), so the script formats two numbers per bucket. One bulk string instead of an array:
-- the client decodes one value per batch (ioredis' RESP decoder costs several property lookups
-- per array entry: 25,000-38,000 fewer instructions per request in the sidecar, measured with
-- callgrind). '%d' formats Lua's doubles as 64-bit integers, exact below 2^53 and much cheaper
-- than '%.0f' (tostring would print 16-digit µs values as 1.7953e+15).
--
-- A call whose arguments do not match its keys is refused before anything is read or written.
local nargs = #ARGV
local counts = {}
local a = 2
local k = 0
while a <= nargs do
  local n = tonumber(ARGV[a])
  if n == nil or n < 1 then break end
  counts[#counts + 1] = n
  a = a + 1 + 4 * n
  k = k + n
end
if a ~= nargs + 1 or k ~= #KEYS then
  return redis.error_reply('portcullis token bucket: arguments do not match the keys (' .. nargs .. ' arguments for ' .. #KEYS .. ' keys)')
end

local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end

local STATE = '<i8<i8'

-- The bucket at `key` refilled to now: its micro-tokens and the time of that state. A missing key
-- is a full bucket. A clock behind the stored state (another sidecar's test clock, or Redis failed
-- over to a replica whose clock is behind) counts as no time passed: the time is the stored one.
local function refill(key, rate, capacity)
  local stored = redis.call('GET', key)
  if not stored or #stored ~= 16 then return capacity, now end
  local t, last = struct.unpack(STATE, stored)
  if now < last then return math.min(capacity, t), last end
  local elapsed = now - last
  -- Cap elapsed before multiplying so elapsed * rate stays exact.
  if elapsed >= math.ceil(capacity / rate) then return capacity, now end
  return math.min(capacity, t + elapsed * rate), now
end

local reply = {}
local r = 0
local tokens, times, needs = {}, {}, {}
a = 2
k = 0
for i = 1, #counts do
  local n = counts[i]
  if n == 1 then
    -- One bucket (the common case), without the tables a take of several needs.
    local need = tonumber(ARGV[a + 3]) * 1000000
    local t, at = refill(KEYS[k + 1], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]) * 1000000)
    if t >= need then
      t = t - need
      redis.call('SET', KEYS[k + 1], struct.pack(STATE, t, at), 'PX', ARGV[a + 4])
      reply[r + 1] = '1'
    else
      reply[r + 1] = '0'
    end
    reply[r + 2] = string.format('%d %d', t, at)
    r = r + 2
  else
    local allowed = true
    for j = 1, n do
      local b = a + 4 * j - 3
      local need = tonumber(ARGV[b + 2]) * 1000000
      local t, at = refill(KEYS[k + j], tonumber(ARGV[b]), tonumber(ARGV[b + 1]) * 1000000)
      if t < need then allowed = false end
      tokens[j] = t
      times[j] = at
      needs[j] = need
    end
    r = r + 1
    reply[r] = allowed and '1' or '0'
    for j = 1, n do
      local t = tokens[j]
      if allowed then
        t = t - needs[j]
        redis.call('SET', KEYS[k + j], struct.pack(STATE, t, times[j]), 'PX', ARGV[a + 4 * j])
      end
      r = r + 1
      reply[r] = string.format('%d %d', t, times[j])
    end
  end
  a = a + 1 + 4 * n
  k = k + n
end
return table.concat(reply, ' ')
