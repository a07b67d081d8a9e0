// A tiny OTLP/gRPC receiver: @grpc/grpc-js serves the three OTLP collector services, and every
// Export request is decoded with the OpenTelemetry JavaScript project's own generated protobuf
// root (@opentelemetry/otlp-transformer, build/src/generated/root.js), as receiver.js does for
// OTLP/HTTP.
//
// Usage: node grpc_receiver.js <otlp-transformer node_modules> <grpc-js node_modules>
//            [--tls <key.pem> <cert.pem> [--client-ca <ca.pem>]] [--fail <n> <code>]
//            [--partial <rejected> <message>] [--hang]
//   --tls        serve TLS with that key and certificate (else plaintext HTTP/2)
//   --client-ca  mutual TLS: every client must present a certificate that CA signed
//   --fail       answer the first <n> Export calls with gRPC status <code> (e.g. 14,
//                UNAVAILABLE) after decoding them; <n> = -1: every call
//   --partial    answer every accepted call with that partial_success
//   --hang       decode every Export call and never answer it (the client's deadline ends it)
// Prints "CONTROL <port>" and "LISTENING <port>", then for every Export call two lines, in the
// format of receiver.js:
//   HEADERS <json>: {"connection": <n-th HTTP/2 connection, from 1>, "path": <the gRPC method
//                    path>, "user-agent": ..., "x-gym-test": ... (metadata values, or null),
//                    "grpc-status": <the status code answered>; with --client-ca
//                    "x-client-cert-cn": the subject CN of the client's certificate}
//   DECODED <content-type> <gzip|identity> <json>: the content-type and grpc-encoding request
//           headers as they came over the wire, and the decoded Export<Signal>ServiceRequest
//           (64-bit integers as strings, enums as numbers, bytes as base64).
// A request that does not decode prints "ERROR <message>" instead and is answered
// INVALID_ARGUMENT; a refused TLS handshake prints "HANDSHAKE_FAILED <message>".
//
// The control port takes plain HTTP: POST /sync with an x-gym-test header prints a HEADERS line
// ({"path": "/sync", "x-gym-test": ...}) and "DECODED control identity {}" once every call answered
// before it has been printed (one Node.js thread prints in order), and answers 200.
'use strict';
const http = require('http');
const http2 = require('http2');
const path = require('path');

const otlpModules = process.argv[2];
const grpcModules = process.argv[3];
const root = require(path.join(otlpModules, '@opentelemetry/otlp-transformer/build/src/generated/root.js'));
const grpc = require(path.join(grpcModules, '@grpc/grpc-js'));

const { tls, clientCa, options } =
  require('./args.js').parseArgs(process.argv, 4, { '--fail': 2, '--hang': 0, '--partial': 2 });
let failLeft = options['--fail'] ? Number(options['--fail'][0]) : 0;
const failCode = options['--fail'] ? Number(options['--fail'][1]) : 0;
const partial = options['--partial']
  ? { rejected: options['--partial'][0], message: options['--partial'][1] } : null;
const hang = '--hang' in options;

const line = (text) => process.stdout.write(`${String(text).replace(/\n/g, ' ')}\n`);

// What gRPC hides from a handler (the request's content-type and grpc-encoding headers, and which
// HTTP/2 connection carried it) is copied into metadata keys of our own before grpc-js reads the
// headers: its 'stream' listener is added after ours, and both get the same headers object.
let connections = 0;
const wire = (server) => {
  server.on('session', (session) => {
    session.gymConnection = ++connections;
  });
  server.on('stream', (stream, headers) => {
    headers['x-gym-wire-content-type'] = headers['content-type'] ?? '';
    headers['x-gym-wire-encoding'] = headers['grpc-encoding'] ?? 'identity';
    headers['x-gym-wire-path'] = headers[':path'] ?? '';
    headers['x-gym-wire-connection'] = String(stream.session?.gymConnection ?? 0);
  });
  // A refused client certificate only shows as "socket hang up": its verification error is added.
  server.on('tlsClientError', (e, socket) => {
    const why = socket?.authorizationError ? ` (client certificate: ${socket.authorizationError})` : '';
    line(`HANDSHAKE_FAILED ${e.message}${why}`);
  });
  return server;
};
const createServer = http2.createServer;
const createSecureServer = http2.createSecureServer;
http2.createServer = (...args) => wire(createServer.apply(http2, args));
http2.createSecureServer = (...args) => wire(createSecureServer.apply(http2, args));

const v1 = root.opentelemetry.proto.collector;
const services = [
  ['metrics', 'MetricsService', v1.metrics.v1.ExportMetricsServiceRequest, v1.metrics.v1.ExportMetricsServiceResponse, 'rejectedDataPoints'],
  ['trace', 'TraceService', v1.trace.v1.ExportTraceServiceRequest, v1.trace.v1.ExportTraceServiceResponse, 'rejectedSpans'],
  ['logs', 'LogsService', v1.logs.v1.ExportLogsServiceRequest, v1.logs.v1.ExportLogsServiceResponse, 'rejectedLogRecords'],
];

const first = (metadata, key) => {
  const v = metadata.get(key);
  return v.length > 0 ? String(v[0]) : null;
};

const server = new grpc.Server();
for (const [pkg, name, Request, Response, rejectedKey] of services) {
  if (typeof v1[pkg].v1[name] !== 'function') throw new Error(`the generated root has no ${name}`);
  const definition = {
    Export: {
      path: `/opentelemetry.proto.collector.${pkg}.v1.${name}/Export`,
      requestStream: false,
      responseStream: false,
      // Raw bytes in, so that decoding errors are ours to report.
      requestSerialize: (b) => b,
      requestDeserialize: (b) => b,
      responseSerialize: (m) => Buffer.from(Response.encode(m).finish()),
      responseDeserialize: (b) => Response.decode(b),
    },
  };
  server.addService(definition, {
    Export: (call, callback) => {
      const md = call.metadata;
      let status = grpc.status.OK;
      if (failLeft !== 0) {
        status = failCode;
        if (failLeft > 0) --failLeft;
      }
      const headers = {
        connection: Number(first(md, 'x-gym-wire-connection')),
        path: first(md, 'x-gym-wire-path'),
        'user-agent': first(md, 'user-agent'),
        'x-gym-test': first(md, 'x-gym-test'),
        'grpc-status': status,
      };
      // Only under mutual TLS, so that the other receivers' headers stay as they were.
      if (clientCa) headers['x-client-cert-cn'] = call.getAuthContext()?.sslPeerCertificate?.subject?.CN ?? null;
      line(`HEADERS ${JSON.stringify(headers)}`);
      let decoded;
      try {
        decoded = Request.toObject(Request.decode(call.request), { longs: String, enums: Number, bytes: String, defaults: false, oneofs: false });
      } catch (e) {
        line(`ERROR ${e.message}`);
        callback({ code: grpc.status.INVALID_ARGUMENT, details: `undecodable request: ${e.message}` });
        return;
      }
      line(`DECODED ${first(md, 'x-gym-wire-content-type')} ${first(md, 'x-gym-wire-encoding')} ${JSON.stringify(decoded)}`);
      if (hang) return;  // never answered
      if (status !== grpc.status.OK) {
        callback({ code: status, details: 'the test receiver refuses this call' });
        return;
      }
      const response = partial
        ? Response.create({ partialSuccess: { [rejectedKey]: partial.rejected, errorMessage: partial.message } })
        : Response.create({});
      callback(null, response);
    },
  });
}

const control = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/sync') {
      res.writeHead(404);
      res.end();
      return;
    }
    line(`HEADERS ${JSON.stringify({ path: '/sync', 'x-gym-test': req.headers['x-gym-test'] ?? null })}`);
    line('DECODED control identity {}');
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{}');
  });
});

// checkClientCertificate with a client CA: a client without a certificate it signed fails the
// handshake.
const credentials = tls
  ? grpc.ServerCredentials.createSsl(clientCa, [{ private_key: tls.key, cert_chain: tls.cert }], clientCa !== null)
  : grpc.ServerCredentials.createInsecure();
control.listen(0, '127.0.0.1', () => {
  line(`CONTROL ${control.address().port}`);
  server.bindAsync('127.0.0.1:0', credentials, (err, port) => {
    if (err) {
      line(`ERROR bind: ${err.message}`);
      process.exit(1);
    }
    line(`LISTENING ${port}`);
  });
});
process.on('SIGTERM', () => {
  control.close();
  server.tryShutdown(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
});
