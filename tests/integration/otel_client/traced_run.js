// An application instrumented with the official OpenTelemetry JavaScript SDK calls an agent's
// /run inside a span of its own, with the W3C propagator injecting traceparent: the interop
// check of W3C propagation (NeMo RL sends traceparent into Gym this way).
// Usage: node traced_run.js <node_modules dir> <agent url> <row.json>
// Prints one JSON line: {"trace_id", "span_id", "status", "body"}.
'use strict';
const path = require('path');
const fs = require('fs');

const modules = process.argv[2];
const api = require(path.join(modules, '@opentelemetry/api'));
const { BasicTracerProvider } = require(path.join(modules, '@opentelemetry/sdk-trace-base'));
const { W3CTraceContextPropagator } = require(path.join(modules, '@opentelemetry/core'));

const provider = new BasicTracerProvider();
const tracer = provider.getTracer('gym-interop-test');
const propagator = new W3CTraceContextPropagator();

async function main() {
  const [url, rowFile] = [process.argv[3], process.argv[4]];
  const row = fs.readFileSync(rowFile, 'utf8');
  const span = tracer.startSpan('training.step', { kind: api.SpanKind.CLIENT });
  const ctx = api.trace.setSpan(api.context.active(), span);
  const headers = { 'content-type': 'application/json' };
  propagator.inject(ctx, headers, api.defaultTextMapSetter);
  const res = await fetch(`${url}/run`, { method: 'POST', headers, body: row });
  const body = await res.text();
  span.end();
  const sc = span.spanContext();
  process.stdout.write(JSON.stringify({ trace_id: sc.traceId, span_id: sc.spanId, status: res.status,
                                        traceparent: headers.traceparent, body }) + '\n');
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({ error: String(e) }) + '\n');
  process.exit(1);
});
