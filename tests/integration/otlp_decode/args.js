// The command-line options of both receivers: --tls <key.pem> <cert.pem> and --client-ca <ca.pem>
// for every receiver, and `extra`, the receiver's own ({name: arity}). Exits with 2 on an unknown
// option or --client-ca without --tls.
'use strict';
const fs = require('fs');

function parseArgs(argv, first, extra = {}) {
  const out = { tls: null, clientCa: null, options: {} };
  for (let i = first; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '--tls') {
      out.tls = { key: fs.readFileSync(argv[++i]), cert: fs.readFileSync(argv[++i]) };
    } else if (a === '--client-ca') {
      out.clientCa = fs.readFileSync(argv[++i]);
    } else if (Object.hasOwn(extra, a)) {
      out.options[a] = argv.slice(i + 1, i + 1 + extra[a]);
      i += extra[a];
    } else {
      process.stderr.write(`unknown argument ${a}\n`);
      process.exit(2);
    }
  }
  if (out.clientCa && !out.tls) {
    process.stderr.write('--client-ca needs --tls\n');
    process.exit(2);
  }
  return out;
}

module.exports = { parseArgs };
