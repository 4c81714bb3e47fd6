-- wrk script for the tollgate benchmark (bench/run.ts): POSTs one JSON body and prints a machine-readable
-- summary. BENCH_BODY (the JSON text) and BENCH_AUTH (bearer token, optional) come from the environment.
wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY") or "{}"
wrk.headers["Content-Type"] = "application/json"
local auth = os.getenv("BENCH_AUTH")
if auth and auth ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. auth
end

-- Latency figures are in microseconds; `errors.status` counts answers that were not 2xx or 3xx.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%.0f,"duration_us":%.0f,"bytes":%.0f,' ..
    '"errors":{"connect":%.0f,"read":%.0f,"write":%.0f,"status":%.0f,"timeout":%.0f},' ..
    '"latency_us":{"min":%.1f,"mean":%.1f,"p50":%.1f,"p90":%.1f,"p99":%.1f,"max":%.1f}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
