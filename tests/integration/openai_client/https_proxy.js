// An https front for a plain-HTTP test server (the fake OpenAI endpoint): TLS with the given key
// and certificate, every request forwarded as it is. Prints "LISTENING <port>" once bound.
// Usage: node https_proxy.js KEY CERT TARGET_PORT
'use strict';
const fs = require('fs');
const http = require('http');
const https = require('https');

const [key, cert, target] = process.argv.slice(2);
const server = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
  const upstream = http.request(
    { host: '127.0.0.1', port: Number(target), path: req.url, method: req.method, headers: req.headers },
    (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
  upstream.on('error', (e) => {
    res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify(String(e)));
  });
  req.pipe(upstream);
});
server.listen(0, '127.0.0.1', () => console.log(`LISTENING ${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
