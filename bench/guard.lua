-- wrk script for the CPU guard (bench/guard.ts): GUARD_REQUESTS answered requests of one kind, then
-- the thread stops and says so on stdout, so every target does the same number of requests whatever
-- its speed (wrk itself waits out its -d; the guard sends it SIGINT on that line, and it reports).
--   GUARD_KIND=get    GET of the URL given to wrk
--   GUARD_KIND=patch  PATCH /v1/inventory/GUARD_PET {"quantity": n}, n changing each time
--   GUARD_KIND=order  POST /v1/store/orders {"petId": GUARD_PET, "quantity": 1}
-- The Authorization header comes from wrk's -H option; run with -t1 (the count is per thread).
-- GUARD_DELAY_MS, when set: each connection waits that long after an answer before its next request,
-- so that c connections offer at most c / (delay + latency) requests a second: two builds can then be
-- compared at one offered rate instead of each flat out (the bench's BROKERS_PACE_MS).
local kind = os.getenv("GUARD_KIND") or "get"
local pet = os.getenv("GUARD_PET") or "1"
local limit = tonumber(os.getenv("GUARD_REQUESTS") or "10000")
local n = 0
local answered = 0
local pause = tonumber(os.getenv("GUARD_DELAY_MS") or "")
if pause ~= nil then
  delay = function() return pause end
end

if kind ~= "get" then wrk.headers["Content-Type"] = "application/json" end

request = function()
  n = n + 1
  if kind == "patch" then
    return wrk.format("PATCH", "/v1/inventory/" .. pet, nil, string.format('{"quantity":%d}', (n * 7919) % 1000000))
  elseif kind == "order" then
    return wrk.format("POST", "/v1/store/orders", nil, '{"petId":' .. pet .. ',"quantity":1}')
  end
  return wrk.format("GET")
end

response = function(status, headers, body)
  answered = answered + 1
  if answered == limit then
    io.write("guard: requests done\n")
    io.flush()
    wrk.thread:stop()
  end
end
