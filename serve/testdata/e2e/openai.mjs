// End-to-end check of `minfer serve` with the official OpenAI Node client.
// Run by internal/cli's TestServeOpenAIClient:
//   OPENAI_PREFIX=<npm prefix holding node_modules/openai> BASE_URL=http://127.0.0.1:PORT/v1 MODEL=name API_KEY=key node openai.mjs
// Exits 0 after printing "ok" and a JSON summary, 1 with the failed check.
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const require = createRequire(process.env.OPENAI_PREFIX + '/node_modules/');
const OpenAI = require('openai');
const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, maxRetries: 0, timeout: 60_000 });
const model = process.env.MODEL;
const summary = {};

const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Say hello.' },
];

// Models.
const models = await client.models.list();
assert.deepEqual(models.data.map((m) => m.id), [model]);

// Chat, whole and streamed: the same text for the same seed.
const params = { model, messages, max_tokens: 12, temperature: 0.7, seed: 42 };
const whole = await client.chat.completions.create(params);
assert.equal(whole.object, 'chat.completion');
assert.equal(whole.choices.length, 1);
assert.equal(whole.choices[0].message.role, 'assistant');
assert.ok(['stop', 'length'].includes(whole.choices[0].finish_reason));
assert.ok(whole.usage.prompt_tokens > 0);
assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + whole.usage.completion_tokens);
const again = await client.chat.completions.create(params);
assert.equal(again.choices[0].message.content, whole.choices[0].message.content, 'same seed, same text');

const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
let text = '', finish = null, usage = null, role = null;
for await (const chunk of stream) {
  assert.equal(chunk.object, 'chat.completion.chunk');
  if (chunk.usage) usage = chunk.usage;
  const c = chunk.choices[0];
  if (!c) continue;
  if (c.delta.role) role = c.delta.role;
  if (c.delta.content) text += c.delta.content;
  if (c.finish_reason) finish = c.finish_reason;
}
assert.equal(role, 'assistant');
assert.equal(text, whole.choices[0].message.content, 'streamed chat = whole chat');
assert.equal(finish, whole.choices[0].finish_reason);
assert.deepEqual(usage, whole.usage);
summary.chat = { text, finish, usage };

// max_completion_tokens and stop.
const capped = await client.chat.completions.create({ ...params, max_completion_tokens: 3, seed: 7 });
assert.equal(capped.usage.completion_tokens <= 3, true);
if (capped.usage.completion_tokens === 3) assert.equal(capped.choices[0].finish_reason, 'length');

// Completions, whole and streamed.
const cparams = { model, prompt: 'Once upon a time', max_tokens: 10, temperature: 0.9, top_p: 0.9, seed: 3, presence_penalty: 0.5, frequency_penalty: 0.5 };
const cwhole = await client.completions.create(cparams);
assert.equal(cwhole.object, 'text_completion');
const cstream = await client.completions.create({ ...cparams, stream: true });
let ctext = '', cfinish = null;
for await (const chunk of cstream) {
  ctext += chunk.choices[0].text;
  if (chunk.choices[0].finish_reason) cfinish = chunk.choices[0].finish_reason;
}
assert.equal(ctext, cwhole.choices[0].text, 'streamed completion = whole completion');
assert.equal(cfinish, cwhole.choices[0].finish_reason);
summary.completion = { text: ctext, finish: cfinish, usage: cwhole.usage };

// A stream abandoned midway; the server goes on serving.
const long = await client.completions.create({ model, prompt: 'A long story:', max_tokens: 200, stream: true, seed: 1 });
let n = 0;
for await (const chunk of long) {
  if (++n === 2) { long.controller.abort(); break; }
}

// Errors arrive as the client's typed errors.
await assert.rejects(client.chat.completions.create({ ...params, model: 'no-such-model' }), (e) => {
  assert.equal(e.status, 404); assert.equal(e.code, 'model_not_found'); assert.ok(e instanceof OpenAI.NotFoundError); return true;
});
await assert.rejects(client.chat.completions.create({ ...params, n: 2 }), (e) => {
  assert.equal(e.status, 400); assert.ok(e instanceof OpenAI.BadRequestError); assert.match(e.message, /n=2/); return true;
});
await assert.rejects(client.completions.create({ model, prompt: 'x'.repeat(1) + ' y'.repeat(5000) }), (e) => {
  assert.equal(e.status, 400); assert.equal(e.code, 'context_length_exceeded'); return true;
});
const badKey = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: 'wrong', maxRetries: 0 });
await assert.rejects(badKey.models.list(), (e) => {
  assert.equal(e.status, 401); assert.ok(e instanceof OpenAI.AuthenticationError); return true;
});

const after = await client.completions.create({ ...cparams });
assert.equal(after.choices[0].text, cwhole.choices[0].text, 'after an abandoned stream');
console.log('ok');
console.log(JSON.stringify(summary));
