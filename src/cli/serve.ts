/**
 * workmem serve: the working-memory proxy (src/serve/) until Ctrl-C. Sessions are kept in
 * the home's folders or, with --database-url / --database-url-file / WORKMEM_DATABASE_URL,
 * in PostgreSQL, where several proxies share them. The upstream's key comes from
 * OPENAI_API_KEY (never a flag), or with --forward-auth from each client.
 */
import { withoutSecrets, withoutUserinfo } from '../llm/baseUrl.js';
import { readSecretFile } from './secretFile.js';
import { PortInUseError, startProxy } from '../serve/proxyServer.js';
import { homeServeToken } from '../serve/serveToken.js';
import { defaultHome } from '../storage/sessionPaths.js';
import { DEFAULT_VIZ_PORT } from '../trace/liveLink.js';
import type { CliIO, Flags } from './cliIO.js';
import { databaseOf, storeOf } from './databaseStore.js';
import { startOtlp } from './otlpFlag.js';
import { terminalLine } from './terminalText.js';
import { TESTING_KEY, startTestingServer, testingProfile } from './testingModel.js';
import { UsageError } from './usageError.js';

export async function main({ flags, positionals }: { flags: Flags; positionals: string[] }, io: CliIO): Promise<number> {
  if (positionals.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const upstream = typeof flags.upstream === 'string' ? flags.upstream.trim() : '';
  if (!upstream) throw new UsageError('give the model server to send requests to: --upstream <base-url> (e.g. https://api.openai.com/v1)');
  const profile = testingProfile(upstream, '--upstream');
  if (!profile) {
    let parsed: URL;
    try {
      parsed = new URL(upstream);
    } catch {
      throw new UsageError(`--upstream ${JSON.stringify(upstream.replace(/^.*@/, '***@'))} is not a URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new UsageError(`--upstream must be an http:// or https:// URL, got ${JSON.stringify(withoutUserinfo(upstream))}`);
  }
  const port = numberFlag(flags.port, '--port', 0, 65535) ?? 0;
  const contextWindow = numberFlag(flags['context-window'], '--context-window', 1024, 100_000_000);
  const keepOpenMs = numberFlag(flags['keep-open'], '--keep-open', 0, 3_600_000);
  const host = typeof flags.host === 'string' ? flags.host : '127.0.0.1';
  const warn = (message: string): void => void io.stderr.write(`workmem serve: ${terminalLine(message)}\n`);
  const given = tokenOf(flags, io.env, warn);
  const home = typeof flags.home === 'string' ? flags.home : defaultHome(io.env);
  // A token on loopback too: another account on this machine neither spends the upstream's key nor reads the sessions.
  const kept = given ? null : await homeServeToken(home);
  const token = given ?? kept!.token;
  const forwardAuth = flags['forward-auth'] === true;
  const apiKey = io.env.OPENAI_API_KEY?.trim() || undefined;
  const inspect = flags.inspect === true ? (numberFlag(flags['inspect-port'], '--inspect-port', 1, 65535) ?? DEFAULT_VIZ_PORT) : undefined;
  const database = databaseOf(flags, io.env, warn);
  const otlp = await startOtlp(flags, io.env); // registered before the proxy starts: its sessions report to it
  const store = storeOf(database);
  // testing:<profile>: the behaviour profile's test server is the upstream, offline, with no key.
  const testing = profile ? await startTestingServer(profile) : undefined;
  try {
    const proxy = await startProxy({
      upstream: testing?.baseURL ?? upstream,
      ...(testing ? { apiKey: TESTING_KEY } : apiKey ? { apiKey } : {}),
      forwardAuth,
      host,
      port,
      token,
      home,
      ...(store ? { store } : {}),
      cwd: io.cwd,
      env: io.env,
      ...(contextWindow ? { contextWindow } : {}),
      ...(keepOpenMs !== undefined ? { keepOpenMs } : {}),
      ...(inspect ? { visualizer: inspect } : {}),
      warn: (message) => io.stderr.write(`workmem serve: ${terminalLine(message)}\n`),
      ...(flags.quiet === true ? {} : { log: (line: string) => io.stderr.write(`workmem serve: ${terminalLine(line)}\n`) }),
    }).catch((error: unknown) => {
      if (error instanceof PortInUseError) throw new UsageError(error.message);
      throw error;
    });
    const to = testing ? `${upstream} (offline, ${testing.baseURL})` : withoutSecrets(upstream);
    io.stdout.write(`workmem serve on ${proxy.url} → ${terminalLine(to)}\n`);
    io.stdout.write(
      `(sessions ${database ? `in ${terminalLine(withoutSecrets(database.url))}` : `of ${terminalLine(home)}`}; ` +
        `point a client at it: OPENAI_BASE_URL=${proxy.url} ${forwardAuth ? `and the header x-workmem-token: ${token}` : `OPENAI_API_KEY=${token}`}; Ctrl-C stops)\n`,
    );
    if (kept) io.stdout.write(`(the token is kept in ${terminalLine(kept.path)}; --token-file or WORKMEM_SERVE_TOKEN gives another)\n`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await proxy.close();
    return 0;
  } finally {
    await otlp?.shutdown();
    await store?.close();
    await testing?.close();
  }
}

function numberFlag(value: string | boolean | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (typeof value !== 'string' || !Number.isInteger(n) || n < min || n > max)
    throw new UsageError(`${name} ${JSON.stringify(value)} is not a whole number from ${min} to ${max}`);
  return n;
}

/** The token clients must send: the first line of --token-file, or WORKMEM_SERVE_TOKEN. */
function tokenOf(flags: Flags, env: NodeJS.ProcessEnv, warn: (message: string) => void): string | undefined {
  let token = env.WORKMEM_SERVE_TOKEN?.trim();
  if (typeof flags['token-file'] === 'string') token = readSecretFile(flags['token-file'], '--token-file', warn).trim() || undefined;
  if (token !== undefined && token.length < 16) throw new UsageError('the serve token must be at least 16 characters');
  return token || undefined;
}
