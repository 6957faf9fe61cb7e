-- Token bucket check-and-take for a batch of takes in one atomic call: the Lua twin of takeAllUs()
-- in lib/token-bucket/bucket.ts (same operations, same order, so both give identical results; a test holds
-- them to it). The store batches the takes that arrive in one event-loop turn into one call
-- (lib/token-bucket/redis-store.ts): the takes run in order, so two takes of one bucket in a batch see
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
--                  "<prefix>v2:{<key>}:<i>" for its further buckets: lib/token-bucket/redis-store.ts keyOf)
-- ARGV[1]          now in µs, or '' to use Redis TIME (the default: every sidecar shares one clock)
-- ARGV[2]          G, the number of limit groups the call's takes use (a group: one rule's limits
--                  and costs, the same for all its takes, so sent and parsed once per call)
-- then per group   n (its number of buckets), then 4 arguments per bucket: replenishRate (tokens
--                  per second, integer >= 1), burstCapacity (tokens, integer >= 1), cost of a
--                  take (tokens, 0..burstCapacity), key TTL in ms (SET ... PX when written)
-- then per take    its group's number (1..G): the take has that group's n keys in KEYS
--
-- Reply: ONE string of space-separated integers: the call's time in µs, then per take allowed
-- (1|0) and per bucket the micro-tokens it holds after the decision (refilled to the decision's
-- time, charged when admitted). The client derives Retry-After and reset from those with the
-- rule (bucket.ts toDecision), so the script formats one number per bucket. One bulk string
-- instead of an array: the client decodes one value per batch (ioredis' RESP decoder costs
-- several property lookups per array entry: 25,000-38,000 fewer instructions per request in the
-- sidecar, measured with callgrind). '%d' formats Lua's doubles as 64-bit integers, exact below
-- 2^53 and much cheaper than '%.0f' (tostring would print 16-digit µs values as 1.7953e+15).
--
-- A call whose arguments do not match its keys is refused before anything is read or written.
local nargs = #ARGV
local groups = tonumber(ARGV[2]) or 0
local counts, rates, capacities, needs, ttls = {}, {}, {}, {}, {}
local a = 3
for g = 1, groups do
  local n = tonumber(ARGV[a])
  if n == nil or n < 1 or a + 4 * n > nargs then break end
  counts[g] = n
  local rate, capacity, need, ttl = {}, {}, {}, {}
  for j = 1, n do
    local b = a + 4 * j - 3
    rate[j] = tonumber(ARGV[b])
    capacity[j] = tonumber(ARGV[b + 1]) * 1000000
    need[j] = tonumber(ARGV[b + 2]) * 1000000
    ttl[j] = ARGV[b + 3]
  end
  rates[g], capacities[g], needs[g], ttls[g] = rate, capacity, need, ttl
  a = a + 1 + 4 * n
end
local takes = {}
local k = 0
if #counts == groups then
  for i = a, nargs do
    local g = tonumber(ARGV[i])
    local n = counts[g]
    if n == nil then break end
    takes[#takes + 1] = g
    k = k + n
  end
end
if groups < 1 or #counts ~= groups or #takes ~= nargs - a + 1 or k ~= #KEYS then
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

local reply = { string.format('%d', now) }
local r = 1
local tokens, times = {}, {}
k = 0
for i = 1, #takes do
  local g = takes[i]
  local n = counts[g]
  local rate, capacity, need, ttl = rates[g], capacities[g], needs[g], ttls[g]
  if n == 1 then
    -- One bucket (the common case), without the tables a take of several needs.
    local t, at = refill(KEYS[k + 1], rate[1], capacity[1])
    if t >= need[1] then
      t = t - need[1]
      redis.call('SET', KEYS[k + 1], struct.pack(STATE, t, at), 'PX', ttl[1])
      reply[r + 1] = '1'
    else
      reply[r + 1] = '0'
    end
    reply[r + 2] = string.format('%d', t)
    r = r + 2
  else
    local allowed = true
    for j = 1, n do
      local t, at = refill(KEYS[k + j], rate[j], capacity[j])
      if t < need[j] then allowed = false end
      tokens[j] = t
      times[j] = at
    end
    r = r + 1
    reply[r] = allowed and '1' or '0'
    for j = 1, n do
      local t = tokens[j]
      if allowed then
        t = t - need[j]
        redis.call('SET', KEYS[k + j], struct.pack(STATE, t, times[j]), 'PX', ttl[j])
      end
      r = r + 1
      reply[r] = string.format('%d', t)
    end
  end
  k = k + n
end
return table.concat(reply, ' ')
