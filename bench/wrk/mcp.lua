-- wrk script for scripts/bench: one MCP 2026-07-28 tools/call POST, the same on every request.
-- Env: BENCH_BODY (file with the JSON-RPC body), BENCH_HEADERS (file, one "Name: value" a line),
--      BENCH_MARK (a string every correct response body contains: the answer's sha256).
-- Every response is checked: a non-200 status or a body without BENCH_MARK counts as bad, and
-- done() prints "bad N" so the driver can refuse a run that served errors fast.
local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

wrk.method = "POST"
wrk.body = slurp(os.getenv("BENCH_BODY"))
for line in slurp(os.getenv("BENCH_HEADERS")):gmatch("[^\n]+") do
  local name, value = line:match("^([^:]+):%s*(.*)$")
  if name then wrk.headers[name] = value end
end
local mark = os.getenv("BENCH_MARK")

local threads = {}
function setup(thread)
  table.insert(threads, thread)
end

bad = 0
function response(status, headers, body)
  if status ~= 200 or not body:find(mark, 1, true) then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do
    total = total + t:get("bad")
  end
  io.write(string.format("bad %d\n", total))
  io.write(string.format("p50_us %d\n", latency:percentile(50)))
  io.write(string.format("p99_us %d\n", latency:percentile(99)))
  io.write(string.format("requests %d\n", summary.requests))
  io.write(string.format("duration_us %d\n", summary.duration))
end
