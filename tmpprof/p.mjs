import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
const { startTestServer } = await import('/work/main/dist/src/testing/index.js');
const { longSession } = await import('/work/main/dist/test/bench/hostLoopBench.js');
const server = await startTestServer({ policy: () => ({ content: 'Noted.' }), promptCaching: 'off', chunkChars: 64 });
const home = mkdtempSync(join(tmpdir(), 'wm-prof-'));
const proxied = await longSession(home, 10000);
const child = spawn(process.execPath, ['--cpu-prof', '--cpu-prof-dir=/tmp/prof', '/work/main/dist/src/cli/bin.js', 'serve', '--upstream', server.baseURL, '--context-window', '128000'], { env: { PATH: process.env.PATH, WORKMEM_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
let out = '';
const url = await new Promise((res) => { const r = (c) => { out += c; const m = /workmem serve on (http:\/\/\S+\/v1)/.exec(out); if (m) res(m[1]); }; child.stdout.on('data', r); child.stderr.on('data', r); });
const client = new OpenAI({ baseURL: url, apiKey: 'x', maxRetries: 0, defaultHeaders: { 'x-workmem-session': proxied.id } });
const held = proxied.conversation;
console.log('body bytes', JSON.stringify(held).length);
let t0 = performance.now(); JSON.stringify({messages: held}); console.log('stringify ms', performance.now() - t0);
const s = JSON.stringify({messages: held}); t0 = performance.now(); JSON.parse(s); console.log('parse ms', performance.now() - t0);
for (let i = 0; i < 80; i++) {
  held.push({ role: 'user', content: `Question ${i}?` });
  const t = performance.now();
  const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: held, stream: true });
  let text = ''; for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
  if (i % 20 === 0) console.log(i, (performance.now() - t).toFixed(1));
  held.push({ role: 'assistant', content: text });
}
await new Promise((r) => { child.once('exit', r); child.kill('SIGINT'); });
await server.close();
