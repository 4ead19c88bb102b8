/**
 * Tool output is capped when it is captured (pi #8843: session files of hundreds of MB):
 * an output over the limit reaches the model as its head plus a note naming where the
 * full text is, in working-memory/detail/tool-outputs/. The limit is on lines and bytes.
 * If the full text cannot be saved the head still goes to the model, with the reason.
 */
import { byteSize as kb } from '../format/byteSize.js';
import { errorReason } from '../errors/errorText.js';

export interface OutputLimits {
  maxLines: number;
  maxBytes: number;
}

export const DEFAULT_OUTPUT_LIMITS: OutputLimits = { maxLines: 2000, maxBytes: 50 * 1024 };

/**
 * The text the model sees. `save` stores the full output and returns its path (awaited
 * before the capped text is returned); without it (the memory tools, whose files are
 * already there) the note says how to read on.
 */
export async function capOutput(
  content: string,
  limits: OutputLimits,
  save: ((full: string) => string | Promise<string>) | null,
): Promise<string> {
  const bytes = Buffer.byteLength(content);
  let lines = 1;
  for (let i = content.indexOf('\n'); i >= 0; i = content.indexOf('\n', i + 1)) lines++;
  if (lines <= limits.maxLines && bytes <= limits.maxBytes) return content;

  // The head: whole lines, within both limits, cut on a character boundary.
  let head = content;
  if (lines > limits.maxLines) {
    let at = -1;
    for (let n = 0; n < limits.maxLines; n++) at = content.indexOf('\n', at + 1);
    head = content.slice(0, at);
  }
  if (Buffer.byteLength(head) > limits.maxBytes) {
    head = Buffer.from(head)
      .subarray(0, limits.maxBytes)
      .toString('utf8')
      .replace(/\uFFFD+$/, '');
    const lastNewline = head.lastIndexOf('\n');
    if (lastNewline > head.length / 2) head = head.slice(0, lastNewline);
  }
  const shownLines = head.split('\n').length;
  const sizes = `lines 1-${shownLines} of ${lines}, ${kb(Buffer.byteLength(head))} of ${kb(bytes)}`;
  const where = save ? await savedNote(save, content) : 'Read on with offset and limit.';
  return `${head}\n\n[Output truncated (${sizes}). ${where}]`;
}

async function savedNote(save: (full: string) => string | Promise<string>, content: string): Promise<string> {
  try {
    return `The full output is in ${await save(content)}; read it with the read tool (offset/limit).`;
  } catch (error) {
    return `The full output could not be saved (${errorReason(error)}); only this part is kept.`;
  }
}
