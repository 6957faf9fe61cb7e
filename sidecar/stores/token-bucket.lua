-- Token bucket check-and-take for a batch of takes in one atomic call: the Lua twin of takeAllUs()
-- in sidecar/bucket.ts (same operations, same order, so both give identical results; a test holds
-- them to it). The store batches the takes that arrive in one event-loop turn into one call
-- (sidecar/stores/redis.ts): the takes run in order, so two takes of one bucket in a batch see
-- each other exactly as two separate calls would.
--
-- A take charges one or more buckets (several limits on one request): it is admitted only when
-- every bucket holds its cost, and then every one is charged; a refused take charges none (each
-- bucket's state is still written refilled to now, which changes no later decision).
--
-- KEYS             the bucket hash keys of every take, take after take (fields: t = micro-tokens,
--                  ts = µs of that state)
-- ARGV[1]          now in µs, or '' to use Redis TIME (the default: every sidecar shares one clock)
-- then per take    n (its number of buckets), then 4 arguments per bucket: replenishRate (tokens
--                  per second, integer >= 1), burstCapacity (tokens, integer >= 1), cost of this
--                  request (tokens, 0..burstCapacity), key TTL in ms (PEXPIRE on every write)
--
-- Reply: ONE string of space-separated integers, per take: allowed (1|0), then per bucket
-- micro-tokens left, retry-after µs (0 when the bucket alone held the cost), reset µs, and the µs
-- time of its stored state. One bulk
-- string instead of an array: the client decodes one value per batch (ioredis' RESP decoder costs
-- several property lookups per array entry: 25,000-38,000 fewer instructions per request in the
-- sidecar, measured with callgrind) for ~0.3-0.5 µs more of Redis time per take (one
-- string.format). %.0f keeps every digit of the large values (Lua numbers are doubles; tostring
-- would print 16-digit µs values as 1.7953e+15).
--
-- A call whose arguments do not match its keys is refused before anything is read or written.
local nargs = #ARGV
local a = 2
local k = 0
while a <= nargs do
  local n = tonumber(ARGV[a])
  if n == nil or n < 1 then break end
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

local reply = {}
local r = 0
a = 2
k = 0
local tokens, ats, needs = {}, {}, {}
while a <= nargs do
  local n = tonumber(ARGV[a])
  a = a + 1
  local allowed = 1
  for j = 1, n do
    local b = a + 4 * (j - 1)
    local rate = tonumber(ARGV[b])
    local capacity = tonumber(ARGV[b + 1]) * 1000000
    local need = tonumber(ARGV[b + 2]) * 1000000
    local stored = redis.call('HMGET', KEYS[k + j], 't', 'ts')
    local t = tonumber(stored[1])
    local last = tonumber(stored[2])
    -- A clock behind the stored state (another sidecar's test clock, or Redis failed over to a
    -- replica whose clock is behind) counts as no time passed: this take's time is the stored one.
    local at = now
    if t == nil or last == nil then
      t = capacity
    else
      if at < last then at = last end
      local elapsed = at - last
      if elapsed >= math.ceil(capacity / rate) then
        t = capacity
      else
        t = math.min(capacity, t + elapsed * rate)
      end
    end
    if t < need then allowed = 0 end
    tokens[j] = t
    ats[j] = at
    needs[j] = need
  end
  r = r + 1
  reply[r] = allowed
  for j = 1, n do
    local b = a + 4 * (j - 1)
    local rate = tonumber(ARGV[b])
    local capacity = tonumber(ARGV[b + 1]) * 1000000
    local need = needs[j]
    local t = tokens[j]
    if allowed == 1 then t = t - need end
    local retry = 0
    if allowed == 0 and t < need then retry = math.ceil((need - t) / rate) end
    local reset = math.ceil((capacity - t) / rate)
    local t_s = string.format('%.0f', t)
    local at_s = string.format('%.0f', ats[j])
    redis.call('HSET', KEYS[k + j], 't', t_s, 'ts', at_s)
    redis.call('PEXPIRE', KEYS[k + j], ARGV[b + 3])
    r = r + 1
    reply[r] = string.format('%s %.0f %.0f %s', t_s, retry, reset, at_s)
  end
  a = a + 4 * n
  k = k + n
end
return table.concat(reply, ' ')
