/**
 * `workmem serve --help` and the command's flags: kept beside main.ts, which loads them before
 * a command is chosen (the command itself loads only when it runs).
 */
import type { ParseArgsConfig } from 'node:util';
import { DATABASE_HELP, DATABASE_OPTIONS, INSPECT_HELP } from './sharedHelp.js';

/** What `workmem serve --help` prints. */
export const SERVE_USAGE = `workmem serve --upstream <base-url> [--port <n>] [--host <addr>] [--forward-auth]

Serves the Chat Completions API (POST /v1/chat/completions), the Responses API (POST
/v1/responses) and Anthropic's Messages API (POST /v1/messages), streamed or not, with GET
/v1/models passed through, on 127.0.0.1 at the port it prints, and puts a workmem session
between each conversation and the upstream model: working memory, history per phase,
compaction, and workmem's tools, which run inside the proxy (the client sees only its own).
Point a program at it: OPENAI_BASE_URL=<the URL it prints> (Codex: a model provider with
wire_api "responses") and OPENAI_API_KEY=<the token it prints>, or ANTHROPIC_BASE_URL=<that
URL without /v1> and ANTHROPIC_API_KEY=<the token> (Claude Code); the token is asked on
loopback too. A session is named by the x-workmem-session header, else the request's user
field, else found by what it already holds; the response's x-workmem-session header names
it. One line per request goes to stderr (--quiet: none). See docs/proxy.md.

  --upstream <base-url>       the model server for every protocol, e.g.
                              https://api.openai.com/v1; its key comes from OPENAI_API_KEY;
                              testing:<profile> (diligent, lazy, forgetful, eager,
                              sloppy, realistic) plays one offline, no key
  --upstream-chat <base-url>, --upstream-responses <base-url>, --upstream-messages <base-url>
                              a protocol's own model server (e.g. --upstream-messages
                              https://api.anthropic.com/v1, its key from ANTHROPIC_API_KEY)
  --forward-auth              send each client's key upstream instead (its Authorization;
                              for Messages its x-api-key)
  --port <n>                  the port (default: a free one, printed)
  --host <addr>               the address to listen on (default 127.0.0.1)
  --token-file <path>         the token clients send: the file's first line (or env
                              WORKMEM_SERVE_TOKEN; default one made once and kept in
                              <home>/serve-token), as Authorization: Bearer <token>,
                              x-api-key (Anthropic's clients) or x-workmem-token
  --quiet                     no line per request on stderr
  --keep-open <ms>            keep a session open this long after a request, for the
                              conversation's next one (default 5000; 0: close at once);
                              another proxy on the same database waits for it meanwhile
  --context-window <tokens>   the window of every model (default: the known window of
                              the request's model, else 32768)
  --home <dir>                where sessions live (env WORKMEM_HOME; default ~/.workmem)
  --otlp <url>                export OpenTelemetry spans and metrics over OTLP/HTTP to this
                              collector (or set OTEL_EXPORTER_OTLP_ENDPOINT); needs
                              @opentelemetry/api and @opentelemetry/sdk-node installed
${DATABASE_HELP}
${INSPECT_HELP}`;

export const SERVE_OPTIONS: NonNullable<ParseArgsConfig['options']> = {
  upstream: { type: 'string' },
  'upstream-chat': { type: 'string' },
  'upstream-responses': { type: 'string' },
  'upstream-messages': { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
  'forward-auth': { type: 'boolean' },
  'token-file': { type: 'string' },
  'context-window': { type: 'string' },
  'keep-open': { type: 'string' },
  quiet: { type: 'boolean' },
  home: { type: 'string' },
  inspect: { type: 'boolean' },
  'inspect-port': { type: 'string' },
  otlp: { type: 'string' },
  ...DATABASE_OPTIONS,
};
