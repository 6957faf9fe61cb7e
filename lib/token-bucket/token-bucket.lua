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
-- micro-tokens, then the µs time of that state. Read with GET (a call of one bucket) or one MGET
-- for the whole call, written with one SET ... PX (TTL = refill-from-empty time x 2, at least 1 s:
-- an expired key is a full bucket). So a take costs a read and a SET per bucket when admitted and
-- the read alone when refused (the hash buckets of the
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
-- then per take    its group's number (1..G): the take has that group's n keys in KEYS. Left out
--                  when G is 1 (a batch of one rule's takes, the usual case): every take is then
--                  of group 1, and their number is the number of keys / n.
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
--
-- The per-take work is kept small because it is what a batch pays per decision: no C function
-- where a comparison does (math.min), the refill horizon once per group (math.ceil), group numbers
-- looked up as the strings they arrive as (no tonumber per take), library functions in locals.
local call, format, unpack, pack_state, unpack_state = redis.call, string.format, unpack, struct.pack, struct.unpack
local nargs = #ARGV
local groups = tonumber(ARGV[2]) or 0
local counts, rates, capacities, needs, ttls, horizons = {}, {}, {}, {}, {}, {}
local a = 3
for g = 1, groups do
  local n = tonumber(ARGV[a])
  if n == nil or n < 1 or a + 4 * n > nargs then break end
  counts[g] = n
  local rate, capacity, need, ttl, horizon = {}, {}, {}, {}, {}
  for j = 1, n do
    local b = a + 4 * j - 3
    rate[j] = tonumber(ARGV[b])
    capacity[j] = tonumber(ARGV[b + 1]) * 1000000
    need[j] = tonumber(ARGV[b + 2]) * 1000000
    ttl[j] = ARGV[b + 3]
    -- After this many µs an empty bucket is full again; capping elapsed there keeps elapsed * rate exact.
    horizon[j] = math.ceil(capacity[j] / rate[j])
  end
  rates[g], capacities[g], needs[g], ttls[g], horizons[g] = rate, capacity, need, ttl, horizon
  a = a + 1 + 4 * n
end
-- takes[i]: the group of take i; nil when the call names no groups per take (all of group 1).
local takes
local count = 0
local k = 0
if groups >= 1 and #counts == groups then
  if a > nargs and groups == 1 then
    count = math.floor(#KEYS / counts[1])
    k = count * counts[1]
  else
    local group = {}
    for g = 1, groups do group[tostring(g)] = g end
    takes = {}
    for i = a, nargs do
      local g = group[ARGV[i]]
      if g == nil then break end
      count = count + 1
      takes[count] = g
      k = k + counts[g]
    end
    if count ~= nargs - a + 1 then k = -1 end
  end
end
if count < 1 or k ~= #KEYS then
  return redis.error_reply('portcullis token bucket: arguments do not match the keys (' .. nargs .. ' arguments for ' .. #KEYS .. ' keys)')
end

local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local time = call('TIME')
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end

local STATE = '<i8<i8'

-- A batch reads all its buckets with one MGET (a command called from Lua costs its argument objects,
-- lookup, ACL check and reply conversion whatever it does); a bucket written earlier in the call is
-- read from `written`, so two takes of one bucket see each other as with a GET each. One key: GET,
-- and so beyond what unpack() can pass (Lua's C stack; the store sends at most 128 x 4 keys).
local stored, written
if #KEYS > 1 and #KEYS <= 4096 then stored, written = call('MGET', unpack(KEYS)), {} end

-- Bucket `i` of the call refilled to now: its micro-tokens and the time of that state. A missing
-- key is a full bucket. A clock behind the stored state (another sidecar's test clock, or Redis
-- failed over to a replica whose clock is behind) counts as no time passed: the time is the stored one.
local function refill(i, rate, capacity, horizon)
  local value
  if stored then value = written[KEYS[i]] or stored[i] else value = call('GET', KEYS[i]) end
  if not value or #value ~= 16 then return capacity, now end
  local t, last = unpack_state(STATE, value)
  if now < last then
    if t > capacity then return capacity, last end
    return t, last
  end
  local elapsed = now - last
  if elapsed >= horizon then return capacity, now end
  t = t + elapsed * rate
  if t > capacity then return capacity, now end
  return t, now
end

local reply = { format('%d', now) }
local r = 1
local tokens, times = {}, {}
k = 0
for i = 1, count do
  local g = takes and takes[i] or 1
  local n = counts[g]
  local rate, capacity, need, ttl, horizon = rates[g], capacities[g], needs[g], ttls[g], horizons[g]
  if n == 1 then
    -- One bucket (the common case), without the tables a take of several needs.
    local key = KEYS[k + 1]
    local t, at = refill(k + 1, rate[1], capacity[1], horizon[1])
    if t >= need[1] then
      t = t - need[1]
      local value = pack_state(STATE, t, at)
      if written then written[key] = value end
      call('SET', key, value, 'PX', ttl[1])
      reply[r + 1] = '1'
    else
      reply[r + 1] = '0'
    end
    reply[r + 2] = format('%d', t)
    r = r + 2
  else
    local allowed = true
    for j = 1, n do
      local t, at = refill(k + j, rate[j], capacity[j], horizon[j])
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
        local value = pack_state(STATE, t, times[j])
        if written then written[KEYS[k + j]] = value end
        call('SET', KEYS[k + j], value, 'PX', ttl[j])
      end
      r = r + 1
      reply[r] = format('%d', t)
    end
  end
  k = k + n
end
return table.concat(reply, ' ')
