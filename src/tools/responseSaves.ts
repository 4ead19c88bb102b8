/**
 * What one model response may save under working-memory/detail/ in all. A call refused for
 * its name is kept whole (captureBounds.ts), and so are arguments over the per-call limit
 * (toolArguments.ts): both draw on one budget per response, so that no response, however
 * many calls it makes, writes more than its budget to disk. Past it, a call is answered
 * with an error that says it was not kept.
 */
import type { ToolCall } from '../history/messages.js';
import { byteSize as size } from '../format/byteSize.js';
import { errorReason } from '../errors/errorText.js';

export const MAX_RESPONSE_SAVED_BYTES = 32 * 1024 * 1024;

export type SaveCall = (call: ToolCall) => string | Promise<string>;

export class ResponseSaves {
  private used = 0;

  constructor(
    private readonly save: SaveCall,
    readonly limit = MAX_RESPONSE_SAVED_BYTES,
  ) {}

  /** Saves the call's arguments if the budget allows: `kept in <where>`, or why they were not kept. */
  async keep(call: ToolCall): Promise<string> {
    const bytes = Buffer.byteLength(call.function.arguments);
    if (this.used + bytes > this.limit)
      return `not kept: this response already saved ${size(this.used)} of oversized tool calls (at most ${size(this.limit)})`;
    try {
      const where = await this.save(call);
      this.used += bytes;
      return `kept in ${where}`;
    } catch (error) {
      return `not kept: saving failed (${errorReason(error)})`;
    }
  }
}
