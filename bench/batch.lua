-- wrk script for the stock-moves group's batch scenarios (bench/stock-moves.ts): POST
-- /v1/inventory/batch with BATCH_SIZE (1,000) delta changes each.
--   BATCH_PETS=1000 (spread): each batch names BATCH_SIZE distinct pets, one change each, the batches
--     walking over the dataset's pets (BENCH_FIRST_PET .. + BENCH_PET_COUNT - 1) a block at a time;
--     every change of a batch is +1 or every one -1, in turn from one pass over the pets to the next.
--   BATCH_PETS=1 (one hot pet): every change names BENCH_FIRST_PET, +1 and -1 in turn within the batch.
-- So no change runs the stock out (the bench's pets hold 10^9). The bodies are built once, at start.
-- STOCK_REQUESTS, when set: exactly that many batches are sent (after them each connection sends nothing
-- more and waits), and once they are all answered the thread stops and says so on stdout (the bench
-- then SIGINTs wrk): nothing is left in flight, so the server's work is that many batches, bounded in
-- count as well as by wrk's -d. The Authorization header comes from wrk's -H option; run with -t1
-- (the count is per thread).
local first = tonumber(os.getenv("BENCH_FIRST_PET") or "1")
local count = tonumber(os.getenv("BENCH_PET_COUNT") or "1000")
local size = tonumber(os.getenv("BATCH_SIZE") or "1000")
local spread = tonumber(os.getenv("BATCH_PETS") or "1000") > 1
local limit = tonumber(os.getenv("STOCK_REQUESTS") or "")
local n = 0
local answered = 0

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

local function body(pets, deltas)
  local parts = {}
  for i = 1, size do
    parts[i] = string.format('{"petId":%d,"delta":%d}', pets(i), deltas(i))
  end
  return '{"changes":[' .. table.concat(parts, ",") .. ']}'
end

local bodies = {}
if spread then
  local blocks = math.max(1, math.floor(count / size))
  for sign = 0, 1 do
    for b = 0, blocks - 1 do
      bodies[#bodies + 1] = body(function(i) return first + (b * size + i - 1) % count end, function() return sign == 0 and 1 or -1 end)
    end
  end
else
  bodies[1] = body(function() return first end, function(i) return (i % 2 == 1) and 1 or -1 end)
end

request = function()
  -- n counts wrk's own first call too, made once to check the script (its request is never sent).
  if limit ~= nil and n > limit then
    return ""
  end
  local b = bodies[(n % #bodies) + 1]
  n = n + 1
  return wrk.format("POST", "/v1/inventory/batch", nil, b)
end

response = function(status, headers, body)
  answered = answered + 1
  if limit ~= nil and answered == limit then
    io.write("stock: requests done\n")
    io.flush()
    wrk.thread:stop()
  end
end
