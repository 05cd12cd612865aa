-- wrk script for the order scenario: POST /v1/store/orders with {"petId": p, "quantity": 1}, the pet id
-- rotating over the dataset's ids (BENCH_FIRST_PET .. BENCH_FIRST_PET + BENCH_PET_COUNT - 1) so
-- consecutive orders take stock from different pets. The Authorization header comes from wrk's -H option.
local first = tonumber(os.getenv("BENCH_FIRST_PET") or "1")
local count = tonumber(os.getenv("BENCH_PET_COUNT") or "1")
local n = 0

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

request = function()
  local pet = first + (n % count)
  n = n + 1
  return wrk.format("POST", "/v1/store/orders", nil, string.format('{"petId":%d,"quantity":1}', pet))
end
