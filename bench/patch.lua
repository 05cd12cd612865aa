-- wrk script for the PATCH scenario: PATCH /v1/inventory/{petId} with {"quantity": n}, the pet id
-- rotating over the dataset's ids (BENCH_FIRST_PET .. BENCH_FIRST_PET + BENCH_PET_COUNT - 1) so
-- consecutive requests hit different pets. The Authorization header comes from wrk's -H option.
local first = tonumber(os.getenv("BENCH_FIRST_PET") or "1")
local count = tonumber(os.getenv("BENCH_PET_COUNT") or "1")
local n = 0

wrk.method = "PATCH"
wrk.headers["Content-Type"] = "application/json"

request = function()
  local pet = first + (n % count)
  n = n + 1
  local quantity = (n * 7919) % 2147483648
  return wrk.format("PATCH", string.format("/v1/inventory/%d", pet), nil, string.format('{"quantity":%d}', quantity))
end
