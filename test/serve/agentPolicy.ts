/**
 * The stand-in model the agent programs' tests run against: protocolFollower (it keeps its
 * working memory, answers from it), and, asked "Run the command <command>.", a call of the
 * agent's own shell tool with the arguments that agent's tool takes — Codex's exec_command
 * ({ cmd }), Claude Code's Bash ({ command, description }), Qwen's or pi's bash ({ command }) —
 * then, given the command's output, an answer that quotes it.
 */
import { protocolFollower, type Policy } from '../../src/testing/index.js';

const RUN = /Run the command (.+?)\.?$/;
/** Each agent's shell tool, and its arguments for a command. */
const SHELLS: Record<string, (command: string) => Record<string, unknown>> = {
  exec_command: (command) => ({ cmd: command }),
  Bash: (command) => ({ command, description: 'Run the command the user asked for' }),
  bash: (command) => ({ command }),
};
export const COMMAND_OUTPUT = 'The command printed:';

export function agentPolicy(seed: number): Policy {
  const follower = protocolFollower({ seed });
  return (request, context) => {
    const messages = request.messages;
    const last = messages.at(-1)!;
    const asked = messages.findLast((m) => m.role === 'user');
    // The command's output came back (the tail workmem appends to the last message is left out).
    if (last.role === 'tool' && asked && RUN.test(textOf(asked.content))) {
      const output = textOf(last.content).split('\n\n<context_meta>')[0]!.trim();
      return { content: `${COMMAND_OUTPUT} ${output}` };
    }
    const command = last.role === 'user' ? RUN.exec(textOf(last.content).split('\n\n<context_meta>')[0]!.trim())?.[1] : undefined;
    const shell = command ? request.tools?.map((t) => t.function.name).find((name) => name in SHELLS) : undefined;
    if (command && shell) return { toolCalls: [{ name: shell, arguments: JSON.stringify(SHELLS[shell]!(command)) }] };
    return follower(request, context);
  };
}

function textOf(content: unknown): string {
  return typeof content === 'string' ? content : '';
}
