/**
 * Example: another program driving `workmem rpc` as a child process — one JSON command
 * per line in, responses and events out, matched by id.
 *
 * Run it: node dist/examples/rpcClient.js "Hello!"   (with OPENAI_* set, or OPENAI_BASE_URL)
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface RpcRun {
  answers: string[];
  memory: string;
  events: { type: string }[];
}

export async function runRpcClient(options: { prompts: string[]; env: NodeJS.ProcessEnv; cwd?: string; cli?: string }): Promise<RpcRun> {
  const cli = options.cli ?? fileURLToPath(new URL('../src/cli/bin.js', import.meta.url));
  const child = spawn(process.execPath, [cli, 'rpc'], {
    env: options.env,
    cwd: options.cwd ?? process.cwd(),
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting = new Map<string, (response: { success: boolean; data?: unknown; error?: string }) => void>();
  const turnEnds: ((text: string) => void)[] = [];
  const events: { type: string }[] = [];
  let buffer = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buffer += chunk;
    for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
      const message = JSON.parse(buffer.slice(0, at)) as { type: string; id?: string; text?: string };
      buffer = buffer.slice(at + 1);
      if (message.type === 'response') waiting.get(String(message.id))?.(message as never);
      else {
        events.push(message);
        if (message.type === 'turn_end') turnEnds.shift()?.(message.text ?? '');
      }
    }
  });
  let next = 0;
  const call = (command: Record<string, unknown>) =>
    new Promise<{ success: boolean; data?: unknown; error?: string }>((resolve) => {
      const id = `c${++next}`;
      waiting.set(id, resolve);
      child.stdin.write(`${JSON.stringify({ ...command, id })}\n`);
    });

  const answers: string[] = [];
  for (const text of options.prompts) {
    const ended = new Promise<string>((resolve) => turnEnds.push(resolve));
    const response = await call({ type: 'prompt', text });
    if (!response.success) throw new Error(`prompt refused: ${response.error}`);
    answers.push(await ended);
  }
  const memory = await call({ type: 'get_memory' });
  child.stdin.end();
  await new Promise((resolve) => child.on('close', resolve));
  return { answers, memory: (memory.data as { overview: string }).overview, events };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const run = await runRpcClient({ prompts: process.argv.slice(2).length ? process.argv.slice(2) : ['Hello!'], env: process.env });
  for (const answer of run.answers) console.log(answer);
}
