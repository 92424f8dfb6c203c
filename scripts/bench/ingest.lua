-- wrk script: POST /v1/receipts with a distinct 6000-byte receipt (8000 base64 characters)
-- and a distinct app user on every request, so every request stores a new receipt and job.
local threads = {}
local next_thread = 0

function setup(thread)
  next_thread = next_thread + 1
  thread:set("tid", next_thread)
  table.insert(threads, thread)
end

function init(args)
  counter = 0
  rejected = 0
  pad = string.rep("A", 7980)
  key = os.getenv("STOREKEEPER_APP_KEY") or "demo-app-key-0123456789"
end

function request()
  counter = counter + 1
  local id = string.format("%04d%016d", tid, counter)
  local body = '{"appUserId":"u' .. id .. '","receipt":"' .. pad .. id .. '"}'
  return wrk.format("POST", "/v1/receipts", { ["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
  if status ~= 202 then rejected = rejected + 1 end
end

function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do bad = bad + thread:get("rejected") end
  io.write(string.format("non-202 responses: %d\n", bad))
  io.write(string.format("p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000))
end
