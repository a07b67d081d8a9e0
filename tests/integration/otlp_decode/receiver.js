// A tiny OTLP/HTTP metrics receiver built on the OpenTelemetry JavaScript project's own
// generated protobuf root (@opentelemetry/otlp-transformer, build/src/generated/root.js).
// Usage: node receiver.js <node_modules dir>. Prints "LISTENING <port>", then for every
// POST /v1/metrics one line "DECODED <content-type> <gzip|identity> <json>", where <json> is
// the decoded ExportMetricsServiceRequest as an object (64-bit integers as strings, enums as
// numbers). Decoding errors print "ERROR <message>" and answer 400.
'use strict';
const http = require('http');
const path = require('path');
const zlib = require('zlib');

const modules = process.argv[2];
const root = require(path.join(modules, '@opentelemetry/otlp-transformer/build/src/generated/root.js'));
const Request = root.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
const Response = root.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse;

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const type = (req.headers['content-type'] || '').split(';')[0].trim();
    const encoding = req.headers['content-encoding'] === 'gzip' ? 'gzip' : 'identity';
    try {
      if (req.method !== 'POST' || req.url !== '/v1/metrics') throw new Error(`unexpected ${req.method} ${req.url}`);
      let body = Buffer.concat(chunks);
      if (encoding === 'gzip') body = zlib.gunzipSync(body);
      let message;
      if (type === 'application/x-protobuf') {
        message = Request.decode(body);
      } else if (type === 'application/json') {
        message = Request.fromObject(JSON.parse(body.toString('utf8')));
      } else {
        throw new Error(`unexpected content-type ${type}`);
      }
      const decoded = Request.toObject(message, { longs: String, enums: Number, defaults: false, oneofs: false });
      process.stdout.write(`DECODED ${type} ${encoding} ${JSON.stringify(decoded)}\n`);
      if (type === 'application/json') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end('{}');
      } else {
        res.writeHead(200, { 'Content-Type': 'application/x-protobuf' });
        res.end(Buffer.from(Response.encode(Response.create({})).finish()));
      }
    } catch (e) {
      process.stdout.write(`ERROR ${String(e.message).replace(/\n/g, ' ')}\n`);
      res.writeHead(400);
      res.end();
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`LISTENING ${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
