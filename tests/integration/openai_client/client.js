// The official OpenAI client (the `openai` npm package, v6) against a gym-cpp model server, for the
// integration tests: it calls /v1/responses and/or /v1/chat/completions, parses the answers the way
// an application would, and prints one JSON line per call on stdout.
//
//   node client.js <node_modules> <base_url> <mode>
//
//   node_modules  the directory holding `openai` (the test installs openai@6 there with npm)
//   base_url      the model server, e.g. http://127.0.0.1:PORT/v1
//   mode          responses | chat | both (both: the responses line, then the chat line)
//
// Lines printed:
//   responses: {"ok":true,"api":"responses","id":..,"status":..,"output_types":[..],
//               "output_text":..,"output":<the raw output array>,"usage":..}
//   chat:      {"ok":true,"api":"chat","id":..,"choices":<the raw choices array>,"content":..,
//               "finish_reason":..,"usage":..}
//   on any error: {"ok":false,"api":..,"error":"<message>","status":<HTTP status of an APIError,
//               else null>} and exit code 1 (mode "both" stops at the first error).
// The output and choices arrays are printed as the client returned them, unknown fields included
// (prompt_token_ids, generation_token_ids, generation_log_probs of training models).
//
// Environment: OPENAI_CLIENT_MODEL (default "fake-model"), OPENAI_CLIENT_TIMEOUT_MS (default
// 30000). The client does not retry (maxRetries 0), so a failure shows at once.
'use strict';

const path = require('node:path');

function usage(message) {
  process.stderr.write(`client.js: ${message}\nusage: node client.js <node_modules> <base_url> <responses|chat|both>\n`);
  process.exit(2);
}

const [modulesDir, baseURL, mode] = process.argv.slice(2);
if (!modulesDir || !baseURL || !mode) usage('missing arguments');
if (!['responses', 'chat', 'both'].includes(mode)) usage(`unknown mode '${mode}'`);

// Load `openai` from the given node_modules only (not from wherever node would look).
let OpenAI;
try {
  OpenAI = require(require.resolve('openai', { paths: [path.resolve(modulesDir)] }));
} catch (e) {
  process.stdout.write(JSON.stringify({ ok: false, api: null, error: `cannot load openai from ${modulesDir}: ${e.message}`, status: null }) + '\n');
  process.exit(1);
}
OpenAI = OpenAI.OpenAI || OpenAI.default || OpenAI;

const model = process.env.OPENAI_CLIENT_MODEL || 'fake-model';
const client = new OpenAI({
  baseURL,
  apiKey: 'dummy',
  maxRetries: 0,
  timeout: Number(process.env.OPENAI_CLIENT_TIMEOUT_MS || 30000),
});

const weatherParameters = {
  type: 'object',
  properties: { city: { type: 'string', description: 'The city' } },
  required: ['city'],
  additionalProperties: false,
};

async function callResponses() {
  const r = await client.responses.create({
    model,
    input: [{ role: 'user', content: 'What is the weather in Paris?' }],
    tools: [{
      type: 'function',
      name: 'get_weather',
      description: 'Get the weather of a city',
      parameters: weatherParameters,
      strict: false,
    }],
  });
  const output = Array.isArray(r.output) ? r.output : [];
  return {
    ok: true,
    api: 'responses',
    id: r.id,
    status: r.status ?? null,
    output_types: output.map((o) => o.type),
    // The SDK's convenience accessor (text of the output_text parts of message items).
    output_text: r.output_text ?? null,
    output,
    usage: r.usage ?? null,
  };
}

async function callChat() {
  const c = await client.chat.completions.create({
    model,
    messages: [
      { role: 'system', content: 'You are brief.' },
      { role: 'user', content: 'Say hello.' },
    ],
  });
  const choices = Array.isArray(c.choices) ? c.choices : [];
  const first = choices[0] || {};
  return {
    ok: true,
    api: 'chat',
    id: c.id,
    choices,
    content: first.message ? first.message.content ?? null : null,
    finish_reason: first.finish_reason ?? null,
    usage: c.usage ?? null,
  };
}

function failure(api, e) {
  const status = OpenAI.APIError && e instanceof OpenAI.APIError && typeof e.status === 'number' ? e.status : null;
  return { ok: false, api, error: String((e && e.message) || e), status };
}

async function main() {
  const calls = mode === 'both' ? [['responses', callResponses], ['chat', callChat]]
    : mode === 'responses' ? [['responses', callResponses]] : [['chat', callChat]];
  for (const [api, call] of calls) {
    let line;
    try {
      line = await call();
    } catch (e) {
      process.stdout.write(JSON.stringify(failure(api, e)) + '\n');
      return 1;
    }
    process.stdout.write(JSON.stringify(line) + '\n');
  }
  return 0;
}

main().then((code) => { process.exitCode = code; }, (e) => {
  process.stdout.write(JSON.stringify(failure(null, e)) + '\n');
  process.exitCode = 1;
});
