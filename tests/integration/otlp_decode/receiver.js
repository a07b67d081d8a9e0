// A tiny OTLP/HTTP receiver built on the OpenTelemetry JavaScript project's own
// generated protobuf root (@opentelemetry/otlp-transformer, build/src/generated/root.js).
// Usage: node receiver.js <node_modules dir> [--tls <key.pem> <cert.pem> [--client-ca <ca.pem>]].
// With --tls it speaks https (Node's https module with that key and certificate), else plain
// http; --client-ca makes it mutual TLS: every client must present a certificate that CA signed.
// Prints "LISTENING <port>", then for every POST /v1/metrics, /v1/traces or /v1/logs two lines:
//   HEADERS <json>: {"connection": <n-th connection of the server, from 1>, "path": the request
//                    path, "user-agent": ..., "x-gym-test": ...} (header values, or null when
//                    absent); with --client-ca also "x-client-cert-cn": the subject CN of the
//                    client's certificate
//   DECODED <content-type> <gzip|identity> <json>, where <json> is the decoded
//           Export<Signal>ServiceRequest of that path as an object (64-bit integers as strings,
//           enums as numbers, bytes as base64; OTLP/JSON's hex trace and span ids are read as hex).
// Decoding errors print "ERROR <message>" and answer 400. A refused TLS handshake prints
// "HANDSHAKE_FAILED <message>". (grpc_receiver.js is the OTLP/gRPC counterpart.)
'use strict';
const http = require('http');
const https = require('https');
const path = require('path');
const zlib = require('zlib');

const modules = process.argv[2];
const root = require(path.join(modules, '@opentelemetry/otlp-transformer/build/src/generated/root.js'));
const collector = root.opentelemetry.proto.collector;
const signals = {
  '/v1/metrics': [collector.metrics.v1.ExportMetricsServiceRequest, collector.metrics.v1.ExportMetricsServiceResponse],
  '/v1/traces': [collector.trace.v1.ExportTraceServiceRequest, collector.trace.v1.ExportTraceServiceResponse],
  '/v1/logs': [collector.logs.v1.ExportLogsServiceRequest, collector.logs.v1.ExportLogsServiceResponse],
};

const { tls, clientCa } = require('./args.js').parseArgs(process.argv, 3);
let connections = 0;

// OTLP/JSON writes trace and span ids as hex strings, where the protobuf JSON mapping of
// protobuf.js reads bytes as base64: they become bytes before fromObject.
const ID_KEYS = new Set(['traceId', 'spanId', 'parentSpanId']);
const hexIds = (v) => {
  if (Array.isArray(v)) return v.map(hexIds);
  if (v === null || typeof v !== 'object') return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) {
    out[k] = ID_KEYS.has(k) && typeof x === 'string' ? Buffer.from(x, 'hex') : hexIds(x);
  }
  return out;
};

const handler = (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const type = (req.headers['content-type'] || '').split(';')[0].trim();
    const encoding = req.headers['content-encoding'] === 'gzip' ? 'gzip' : 'identity';
    const headers = {
      connection: req.socket.gymConnection,
      path: req.url,
      'user-agent': req.headers['user-agent'] ?? null,
      'x-gym-test': req.headers['x-gym-test'] ?? null,
    };
    // Only under mutual TLS, so that the other receivers' headers stay as they were.
    if (clientCa) headers['x-client-cert-cn'] = req.socket.getPeerCertificate()?.subject?.CN ?? null;
    process.stdout.write(`HEADERS ${JSON.stringify(headers)}\n`);
    try {
      if (req.method !== 'POST' || !signals[req.url]) throw new Error(`unexpected ${req.method} ${req.url}`);
      const [Request, Response] = signals[req.url];
      let body = Buffer.concat(chunks);
      if (encoding === 'gzip') body = zlib.gunzipSync(body);
      let message;
      if (type === 'application/x-protobuf') {
        message = Request.decode(body);
      } else if (type === 'application/json') {
        message = Request.fromObject(hexIds(JSON.parse(body.toString('utf8'))));
      } else {
        throw new Error(`unexpected content-type ${type}`);
      }
      const decoded = Request.toObject(message, { longs: String, enums: Number, bytes: String, defaults: false, oneofs: false });
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
};

// rejectUnauthorized: a client without a certificate the CA signed fails its handshake (never a
// request), as a collector requiring client certificates does.
const server = tls
  ? https.createServer(clientCa ? { ...tls, ca: clientCa, requestCert: true, rejectUnauthorized: true } : tls, handler)
  : http.createServer(handler);
server.on(tls ? 'secureConnection' : 'connection', (socket) => {
  socket.gymConnection = ++connections;
});
// A refused client certificate only shows as "socket hang up": its verification error is added.
server.on('tlsClientError', (e, socket) => {
  const why = socket?.authorizationError ? ` (client certificate: ${socket.authorizationError})` : '';
  process.stdout.write(`HANDSHAKE_FAILED ${String(e.message).replace(/\n/g, ' ')}${why}\n`);
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`LISTENING ${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
