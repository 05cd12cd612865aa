-- wrk script for bench/wal-checkpoint.ts: PATCHes of one pet at a paced rate (each connection waits
-- TAIL_DELAY_MS between an answer and its next request), and at the end the latency percentiles wrk
-- does not print by itself: 99.9 and the maximum, in microseconds.
local pause = tonumber(os.getenv("TAIL_DELAY_MS") or "2")
local n = 0
wrk.method = "PATCH"
wrk.headers["Content-Type"] = "application/json"

delay = function() return pause end

request = function()
  n = n + 1
  return wrk.format("PATCH", "/v1/inventory/1", nil, string.format('{"quantity":%d}', (n * 7919) % 1000000))
end

done = function(summary, latency, requests)
  io.write(string.format("tail: requests %d p50 %d p99 %d p99.9 %d max %d\n", summary.requests,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
