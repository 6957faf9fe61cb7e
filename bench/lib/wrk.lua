-- wrk script for bench/lib/load.ts: prints one machine-readable summary line at the end.
-- Latencies are in microseconds (wrk's unit).
--
-- WRK_ROTATE_FILE (optional): a file of 'Name: value' lines. Request i of a thread then sends line
-- i mod n on top of the -H headers (one user after another); the n requests are formatted once in
-- init. Unset, wrk sends one static request, as without a script.
local rotateFile = os.getenv('WRK_ROTATE_FILE')
if rotateFile ~= nil and rotateFile ~= '' then
  local requests, n, i = {}, 0, 0
  init = function(args)
    for line in io.lines(rotateFile) do
      local name, value = line:match('^([^:]+):%s*(.-)%s*$')
      if name ~= nil then
        local headers = {}
        for k, v in pairs(wrk.headers) do headers[k] = v end
        headers[name] = value
        n = n + 1
        requests[n] = wrk.format(nil, nil, headers)
      end
    end
    if n == 0 then error('no header line in ' .. rotateFile) end
  end
  request = function()
    i = i % n + 1
    return requests[i]
  end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"durationUs":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latencyUs":{"mean":%.1f,"stdev":%.1f,"max":%d,"p50":%d,"p90":%d,"p99":%d,"p999":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.stdev, latency.max,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9)))
end
