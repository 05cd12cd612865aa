-- wrk script for the CPU guard (bench/guard.ts): GUARD_REQUESTS answered requests of one kind, then
-- the thread stops and says so on stdout, so every target does the same number of requests whatever
-- its speed (wrk itself waits out its -d; the guard sends it SIGINT on that line, and it reports).
--   GUARD_KIND=get    GET of the URL given to wrk
--   GUARD_KIND=patch  PATCH /v1/inventory/GUARD_PET {"quantity": n}, n changing each time
--   GUARD_KIND=order  POST /v1/store/orders {"petId": GUARD_PET, "quantity": 1}
--   GUARD_KIND=adjust POST /v1/inventory/GUARD_PET/adjustments {"delta": -1}
--   GUARD_KIND=batch  POST /v1/inventory/batch of GUARD_BATCH changes {"petId", "delta": -1}, over the
--                     GUARD_BATCH_PETS pets from GUARD_PET on, in turn (built once, at start)
-- The guard's pets hold 2147483647 units: removals never run them out, and an addition would overflow.
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

local batch
if kind == "batch" then
  local size = tonumber(os.getenv("GUARD_BATCH") or "1000")
  local pets = tonumber(os.getenv("GUARD_BATCH_PETS") or "100")
  local parts = {}
  for i = 1, size do
    parts[i] = string.format('{"petId":%d,"delta":-1}', tonumber(pet) + (i - 1) % pets)
  end
  batch = '{"changes":[' .. table.concat(parts, ",") .. ']}'
end

request = function()
  n = n + 1
  if kind == "patch" then
    return wrk.format("PATCH", "/v1/inventory/" .. pet, nil, string.format('{"quantity":%d}', (n * 7919) % 1000000))
  elseif kind == "order" then
    return wrk.format("POST", "/v1/store/orders", nil, '{"petId":' .. pet .. ',"quantity":1}')
  elseif kind == "adjust" then
    return wrk.format("POST", "/v1/inventory/" .. pet .. "/adjustments", nil, '{"delta":-1}')
  elseif kind == "batch" then
    return wrk.format("POST", "/v1/inventory/batch", nil, batch)
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
