-- wrk script for the stock-moves group's one-pet scenarios (bench/stock-moves.ts) and the holds
-- group's (bench/holds.ts), all on one pet (BENCH_FIRST_PET; with BENCH_PET_COUNT > 1 the pet
-- rotates like bench/patch.lua):
--   STOCK_KIND=adjust (default)  POST /v1/inventory/{petId}/adjustments with {"delta": 1} and
--                                {"delta": -1} in turn, so the stock never runs out;
--   STOCK_KIND=patch             PATCH /v1/inventory/{petId} with {"quantity": n}, n changing each time
--                                (bench/guard.lua's PATCH): the reference, ended the same way;
--   STOCK_KIND=hold              POST /v1/store/reservations with one line of 1 unit of the pet,
--                                held HOLD_SECONDS (14400, the most: none expires during the bench).
-- STOCK_REQUESTS, when set: exactly that many requests are sent (after them each connection sends
-- nothing more and waits), and once they are all answered the thread stops and says so on stdout
-- (the bench then SIGINTs wrk, which reports): nothing is left in flight, so the server's work is
-- that many requests, bounded in count as well as by wrk's -d. The Authorization header comes from
-- wrk's -H option; run with -t1 (the count is per thread).
local first = tonumber(os.getenv("BENCH_FIRST_PET") or "1")
local count = tonumber(os.getenv("BENCH_PET_COUNT") or "1")
local kind = os.getenv("STOCK_KIND") or "adjust"
local holdSeconds = tonumber(os.getenv("HOLD_SECONDS") or "14400")
local limit = tonumber(os.getenv("STOCK_REQUESTS") or "")
local n = 0
local answered = 0

wrk.headers["Content-Type"] = "application/json"

local deltas = { '{"delta":1}', '{"delta":-1}' }

request = function()
  -- n counts wrk's own first call too, made once to check the script (its request is never sent).
  if limit ~= nil and n > limit then
    return ""
  end
  local pet = first + (n % count)
  n = n + 1
  if kind == "patch" then
    return wrk.format("PATCH", string.format("/v1/inventory/%d", pet), nil, string.format('{"quantity":%d}', (n * 7919) % 1000000))
  end
  if kind == "hold" then
    local body = string.format('{"lines":[{"petId":%d,"quantity":1}],"expiresInSeconds":%d}', pet, holdSeconds)
    return wrk.format("POST", "/v1/store/reservations", nil, body)
  end
  return wrk.format("POST", string.format("/v1/inventory/%d/adjustments", pet), nil, deltas[(n % 2) + 1])
end

response = function(status, headers, body)
  answered = answered + 1
  if limit ~= nil and answered == limit then
    io.write("stock: requests done\n")
    io.flush()
    wrk.thread:stop()
  end
end
