-- wrk script for bench/http_load.sh: POSTs one JSON row and counts non-2xx responses.
--   wrk -t2 -c64 -d10s --latency -s bench/wrk_post.lua http://127.0.0.1:PORT/verify -- BODY_FILE
-- The body file may also come from the environment (WRK_BODY_FILE). The `done` hook prints
-- one machine-readable line, "WRK_RESULT key=value ...", that http_load.sh parses.

local threads = {}

local function read_body(path)
  if not path or path == "" then
    error("wrk_post.lua: no body file (pass it after `--` or set WRK_BODY_FILE)")
  end
  local f, err = io.open(path, "rb")
  if not f then error("wrk_post.lua: cannot open body file: " .. tostring(err)) end
  local body = f:read("*a")
  f:close()
  return body
end

-- Main state: remember every thread so `done` can collect its counters.
function setup(thread)
  table.insert(threads, thread)
end

-- Thread states: runs before wrk formats the (fixed) request.
function init(args)
  wrk.method = "POST"
  wrk.body = read_body(args[1] or os.getenv("WRK_BODY_FILE"))
  wrk.headers["Content-Type"] = "application/json"
  non2xx = 0
  first_bad_status = 0
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    if first_bad_status == 0 then first_bad_status = status end
  end
end

function done(summary, latency, requests)
  local bad, first = 0, 0
  for _, t in ipairs(threads) do
    bad = bad + (t:get("non2xx") or 0)
    local s = t:get("first_bad_status") or 0
    if first == 0 and s ~= 0 then first = s end
  end
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    "WRK_RESULT requests=%d duration_s=%.3f rps=%.1f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f " ..
    "connect=%d read=%d write=%d timeout=%d status_ge400=%d non2xx=%d first_non2xx=%d\n",
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    e.connect, e.read, e.write, e.timeout, e.status, bad, first))
end
