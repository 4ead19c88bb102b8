/**
 * The doors into workmem, each driving the garden conversation against a protocol follower
 * with seed 2: a Session (workmem's own loop, openaiChat), the AI SDK middleware under
 * generateText, streamText and ToolLoopAgent (@ai-sdk/openai-compatible), the same under
 * streamText on MockLanguageModelV3 (the follower in process), and the LangChain middleware
 * under createAgent (ChatOpenAI), invoked and streamed. A door can drive part of the
 * conversation and another process or instance the rest: the host keeps its own messages
 * (`held`, as JSON), workmem its session. Free of vitest, for resumeChild.ts.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { HumanMessage, mapChatMessagesToStoredMessages, mapStoredMessagesToChatMessages, type BaseMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool, ToolLoopAgent, wrapLanguageModel, type ModelMessage } from 'ai';
import { createAgent, tool as langchainTool } from 'langchain';
import { createWorkmem as aiSdkWorkmem } from '../../src/aiSdk/workmemMiddleware.js';
import type { WorkmemEvent } from '../../src/events.js';
import { createWorkmem as langchainWorkmem } from '../../src/langchain/workmemMiddleware.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { createSession, openSession, type Session } from '../../src/session/index.js';
import type { SettingsOverrides } from '../../src/settings/config.js';
import type { ProviderCaching } from '../../src/settings/settings.js';
import type { SessionStore } from '../../src/storage/sessionStore.js';
import { protocolFollower, startTestServer } from '../../src/testing/index.js';
import { followerModel } from './followerModel.js';
import { INSTRUCTIONS, RESERVE, WINDOW, now, prompts, settings, weather, weatherText } from './gardenConversation.js';

export type DoorName =
  'Session' | 'generateText' | 'streamText' | 'ToolLoopAgent' | 'MockLanguageModelV3' | 'createAgent (invoke)' | 'createAgent (stream)';

export interface Drive {
  door: DoorName;
  /** The OpenAI-compatible server (none for the mock). */
  baseURL?: string;
  home: string;
  store?: SessionStore;
  /** The session to go on with; default a new one. */
  sessionId?: string;
  prompts: readonly string[];
  /** The host's messages so far, as `held` left them. */
  held?: unknown[];
  /** Settings over the conversation's (gardenConversation.ts), e.g. SEED_LAYOUT. */
  layout?: SettingsOverrides;
}

export interface Driven {
  answers: string[];
  memory: string;
  events: WorkmemEvent[];
  sessionId: string;
  /** The session's folder (its log and trace). */
  dir: string;
  /** The host's messages at the end, as JSON (LangChain's as its stored messages). */
  held: unknown[];
  /** For the mock: what it was sent, as Chat Completions bodies (JSON text). */
  requests?: string[];
  /** How the session took its provider to cache (its settings'): when the memory is refreshed depends on it. */
  caching: ProviderCaching;
}

export interface DoorRun extends Driven {
  /** What the model was sent, request by request: the server's bodies as JSON text. */
  requests: string[];
}

export const MODEL = 'gpt-4o';
export const policy = () => protocolFollower({ seed: 2 });

/** The whole conversation through a door, against a server of its own. */
export async function runDoor(door: DoorName, home: string, layout?: SettingsOverrides): Promise<DoorRun> {
  const more = layout ? { layout } : {};
  if (door === 'MockLanguageModelV3') {
    const driven = await driveDoor({ door, home, prompts: prompts(), ...more });
    return { ...driven, requests: driven.requests! };
  }
  const server = await startTestServer({ policy: policy(), promptCaching: 'off' });
  try {
    const driven = await driveDoor({ door, baseURL: server.baseURL, home, prompts: prompts(), ...more });
    return { ...driven, requests: server.requests.map((r) => JSON.stringify(r.body)) };
  } finally {
    await server.close();
  }
}

export async function driveDoor(drive: Drive): Promise<Driven> {
  switch (drive.door) {
    case 'Session':
      return viaSession(drive);
    case 'createAgent (invoke)':
    case 'createAgent (stream)':
      return viaLangChain(drive);
    case 'MockLanguageModelV3': {
      const mock = await followerModel(policy(), { model: MODEL, window: WINDOW, reserve: RESERVE });
      return { ...(await viaAiSdk(drive, mock.model)), requests: mock.requests };
    }
    default:
      return viaAiSdk(drive, createOpenAICompatible({ name: 'test', baseURL: drive.baseURL!, includeUsage: true }).chatModel(MODEL));
  }
}

const common = (drive: Drive) => ({
  settings: { ...settings, ...drive.layout },
  home: drive.home,
  cwd: '/work/project',
  env: {},
  now,
  ...(drive.store ? { store: drive.store } : {}),
  ...(drive.sessionId ? { sessionId: drive.sessionId } : {}),
});

function listen(session: Session): WorkmemEvent[] {
  const events: WorkmemEvent[] = [];
  session.on('*', (e) => events.push(e));
  return events;
}

async function finish(
  session: Session,
  answers: string[],
  events: WorkmemEvent[],
  held: unknown[],
  close: () => Promise<void>,
): Promise<Driven> {
  const done = {
    answers,
    memory: session.memory(),
    events,
    sessionId: session.id,
    dir: session.dir,
    held,
    caching: session.settings.caching,
  };
  await close();
  return done;
}

async function viaSession(drive: Drive): Promise<Driven> {
  const { sessionId, ...options } = common(drive);
  const llm = openaiChat({ baseURL: drive.baseURL!, apiKey: 'test', model: MODEL, contextWindow: WINDOW });
  const own = { ...options, llm, instructions: INSTRUCTIONS, tools: [weather] };
  const session = sessionId ? await openSession(sessionId, own) : await createSession(own);
  const events = listen(session);
  const answers: string[] = [];
  for (const text of drive.prompts) answers.push((await session.prompt(text)).text);
  return finish(session, answers, events, [], () => session.close());
}

const aiWeather = tool({
  description: weather.spec.description,
  inputSchema: jsonSchema<{ input: string }>(weather.spec.parameters as never),
  execute: async ({ input }) => weatherText(input),
});

async function viaAiSdk(drive: Drive, model: LanguageModelV3): Promise<Driven> {
  const workmem = await aiSdkWorkmem({ ...common(drive), model, contextWindow: WINDOW });
  const events = listen(workmem.session);
  const wrapped = wrapLanguageModel({ model, middleware: workmem.middleware });
  const tools = { ...workmem.tools, weather: aiWeather };
  const messages = [...((drive.held ?? []) as ModelMessage[])];
  const answers: string[] = [];
  const agent = new ToolLoopAgent({ model: wrapped, instructions: INSTRUCTIONS, tools, stopWhen: stepCountIs(20) });
  for (const text of drive.prompts) {
    messages.push({ role: 'user', content: text });
    const call = { model: wrapped, system: INSTRUCTIONS, messages, tools, stopWhen: stepCountIs(20) };
    const result =
      drive.door === 'generateText'
        ? await generateText(call)
        : drive.door === 'ToolLoopAgent'
          ? await agent.generate({ messages })
          : streamText(call);
    messages.push(...(await result.response).messages);
    answers.push(await result.text);
  }
  return finish(workmem.session, answers, events, messages, () => workmem.close());
}

async function viaLangChain(drive: Drive): Promise<Driven> {
  // The output limit is the model's own in LangChain (no per-call option): workmem's reserve.
  const model = new ChatOpenAI({ model: MODEL, apiKey: 'test', configuration: { baseURL: drive.baseURL! }, maxTokens: RESERVE });
  const workmem = await langchainWorkmem({ ...common(drive), model, contextWindow: WINDOW });
  const events = listen(workmem.session);
  const lcWeather = langchainTool(async ({ input }: { input: string }) => weatherText(input), {
    name: 'weather',
    description: weather.spec.description,
    schema: weather.spec.parameters as never,
  });
  const agent = createAgent({ model, tools: [lcWeather], middleware: [workmem.middleware], systemPrompt: INSTRUCTIONS });
  let messages: BaseMessage[] = mapStoredMessagesToChatMessages((drive.held ?? []) as never);
  const answers: string[] = [];
  for (const text of drive.prompts) {
    const input = { messages: [...messages, new HumanMessage(text)] };
    if (drive.door === 'createAgent (invoke)') messages = (await agent.invoke(input, { recursionLimit: 60 })).messages;
    // Streamed token by token ('messages'), the state after each step read from 'values'.
    else
      for await (const [mode, chunk] of await agent.stream(input, { streamMode: ['values', 'messages'], recursionLimit: 60 }))
        if (mode === 'values') messages = chunk.messages;
    answers.push(messages.at(-1)!.text);
  }
  return finish(workmem.session, answers, events, mapChatMessagesToStoredMessages(messages), () => workmem.close());
}
