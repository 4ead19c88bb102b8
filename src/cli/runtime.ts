/**
 * What every CLI command that talks to a model needs: the LLM from the configuration,
 * and a session — new, resumed by id, or the last one of this directory.
 */
import { relative } from 'node:path';
import type { InspectionEvent } from 'xstate';
import { ConfigError } from '../settings/config.js';
import type { LLM } from '../llm/llm.js';
import { openaiChat, type OpenAIChatOptions } from '../llm/openaiChat.js';
import { createSession, listSessions, openSession, type Session } from '../session/index.js';
import type { SessionStore } from '../storage/sessionStore.js';
import type { Tool } from '../tools/tool.js';
import { DEFAULT_VIZ_PORT } from '../trace/liveLink.js';
import { UsageError } from './usageError.js';
import { settingsOf, type CliConfig } from './config.js';
import { TESTING_KEY, startTestingServer, testingProfile } from './testingModel.js';

export function makeLLM(config: CliConfig): LLM {
  return openaiChat({
    model: config.model,
    ...(config.baseURL ? { baseURL: config.baseURL } : {}),
    ...(config.apiKey ? { apiKey: config.apiKey } : {}),
    ...commonOptions(config),
  });
}

/** The model a command talks to, and what stops it: a `testing:<profile>` model's server (./testingModel.ts), or nothing. */
export interface OpenModel {
  llm: LLM;
  close(): Promise<void>;
}

/** The configuration's model: any endpoint's (makeLLM), or `testing:<profile>` played offline by a test server of its own. */
export async function openModel(config: CliConfig): Promise<OpenModel> {
  const profile = testingProfile(config.model);
  if (!profile) return { llm: makeLLM(config), close: async () => {} };
  const server = await startTestingServer(profile);
  const llm = openaiChat({ model: config.model, baseURL: server.baseURL, apiKey: TESTING_KEY, ...commonOptions(config) });
  return { llm, close: () => server.close() };
}

function commonOptions(config: CliConfig): Partial<OpenAIChatOptions> {
  return {
    ...(config.contextWindow ? { contextWindow: config.contextWindow } : {}),
    ...(config.maxOutputTokens ? { maxOutputTokens: config.maxOutputTokens } : {}),
    ...(config.compactionModel ? { compactionModel: config.compactionModel } : {}),
    ...(config.timeoutMs ? { timeoutMs: config.timeoutMs } : {}),
    ...(config.firstByteTimeoutMs ? { firstByteTimeoutMs: config.firstByteTimeoutMs } : {}),
    ...(config.firstByteMsPerPromptToken !== undefined ? { firstByteMsPerPromptToken: config.firstByteMsPerPromptToken } : {}),
    ...(config.maxRetries !== undefined ? { maxRetries: config.maxRetries } : {}),
    env: {}, // the configuration already holds what the environment said
  };
}

/** How this CLI was started, to print commands the user can paste: `workmem`, or `node dist/src/cli/bin.js`. */
export function selfCommand(): string {
  const script = process.argv[1] ?? '';
  if (/(^|[\\/])workmem$/.test(script)) return 'workmem';
  return `node ${relative(process.cwd(), script) || script}`;
}

/** --inspect / --inspect-port as session options; warnings (settings adjusted, an unreachable visualizer) go to stderr. */
export function inspectOption(
  flags: Record<string, unknown>,
  io: { stderr: NodeJS.WriteStream },
): { visualizer?: number; warn?: (m: string) => void } {
  const warn = (message: string): void => void io.stderr.write(`workmem: ${message}\n`);
  if (!flags.inspect && flags['inspect-port'] === undefined) return { warn };
  const port = flags['inspect-port'] === undefined ? DEFAULT_VIZ_PORT : Number(flags['inspect-port']);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new UsageError(`--inspect-port ${JSON.stringify(flags['inspect-port'])} is not a port number`);
  return { visualizer: port, warn };
}

/** The registry's `store` option when the configuration names a database. */
export function storeOption(config: CliConfig): { store?: SessionStore } {
  return config.store ? { store: config.store } : {};
}

export interface SessionChoice {
  sessionId?: string;
  /** Resume the newest session of this directory. */
  continueLast?: boolean;
  cwd: string;
  name?: string;
  inspect?: (event: InspectionEvent) => void;
  tools?: readonly Tool[];
  /** Stream the trace to `workmem viz` (a port on 127.0.0.1). */
  visualizer?: number;
  warn?: (message: string) => void;
}

export async function startSession(config: CliConfig, llm: LLM, choice: SessionChoice, env: NodeJS.ProcessEnv): Promise<Session> {
  const common = {
    llm,
    home: config.home,
    env,
    // The trace of a database session goes to the database, where `workmem viz --database-url` reads it.
    ...(config.store ? { store: config.store, secrets: config.database?.secrets ?? [] } : {}),
    settings: settingsOf(config),
    ...(config.instructions ? { instructions: config.instructions } : {}),
    ...(config.itemMemory ? { itemMemory: config.itemMemory } : {}),
    ...(choice.inspect ? { inspect: choice.inspect } : {}),
    ...(choice.tools ? { tools: choice.tools } : {}),
    ...(choice.visualizer ? { visualizer: choice.visualizer } : {}),
    ...(choice.warn ? { warn: choice.warn } : {}),
  };
  let id = choice.sessionId;
  if (!id && choice.continueLast) {
    const last = (await listSessions({ home: config.home, cwd: choice.cwd, ...storeOption(config) }))[0];
    if (!last) throw new ConfigError(`no earlier session in ${choice.cwd} to continue; start one without --continue`);
    id = last.id;
  }
  if (id) return openSession(id, common);
  return createSession({ ...common, cwd: choice.cwd, ...(choice.name ? { name: choice.name } : {}) });
}
