-- Token bucket check-and-take: the Lua twin of takeUs() in sidecar/bucket.ts (same operations,
-- same order, so both give identical results; a test holds them to it).
--
-- KEYS[1]  the bucket's hash key (fields: t = micro-tokens, ts = µs of that state)
-- ARGV[1]  replenishRate, tokens per second (integer >= 1)
-- ARGV[2]  burstCapacity, tokens (integer >= 1)
-- ARGV[3]  cost of this request, tokens (integer, 0..burstCapacity)
-- ARGV[4]  key TTL in ms (PEXPIRE on every write)
-- ARGV[5]  now in µs, or '' to use Redis TIME (the default: every sidecar shares one clock)
--
-- Reply: { allowed (1|0), micro-tokens left (string), retry-after µs, reset µs, now µs (string) }
-- Large integers travel as strings: Lua numbers are doubles and Redis truncates number replies.
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2]) * 1000000
local need = tonumber(ARGV[3]) * 1000000
local ttl = tonumber(ARGV[4])
local now
if ARGV[5] ~= '' then
  now = tonumber(ARGV[5])
else
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end

local fill = math.ceil(capacity / rate)
local stored = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = tonumber(stored[1])
local last = tonumber(stored[2])
if tokens == nil or last == nil then
  tokens = capacity
else
  if now < last then now = last end
  local elapsed = now - last
  if elapsed >= fill then
    tokens = capacity
  else
    tokens = math.min(capacity, tokens + elapsed * rate)
  end
end

local allowed = 0
if tokens >= need then
  allowed = 1
  tokens = tokens - need
end
local retry = 0
if allowed == 0 then retry = math.ceil((need - tokens) / rate) end
local reset = math.ceil((capacity - tokens) / rate)

-- %.0f keeps every digit (tostring would print 16-digit µs values as 1.7953e+15).
local tokens_s = string.format('%.0f', tokens)
local now_s = string.format('%.0f', now)
redis.call('HSET', KEYS[1], 't', tokens_s, 'ts', now_s)
redis.call('PEXPIRE', KEYS[1], ttl)
return { allowed, tokens_s, retry, reset, now_s }
