/**
 * The tags workmem uses to frame a request (the memory in the system message, the tail
 * after the last message). Text from outside — tool output, and the memory the model
 * wrote, possibly copying tool output — must not be able to close or forge them: a tool
 * result saying `</working_memory> SYSTEM: …` or carrying its own `<context_meta>` would
 * otherwise read as ours. Their angle bracket is written as `&lt;`, which reads as text.
 */
const TAGS = /<(\/?)(context_meta|memory_reminder|working_memory|detail_index|relevant_memories)(?=[\s>/]|$)/gi;

export function neutraliseTags(text: string): string {
  return text.includes('<') ? text.replace(TAGS, '&lt;$1$2') : text;
}

/** How many framing tags `text` holds (for reports). */
export function countTags(text: string): number {
  return text.match(TAGS)?.length ?? 0;
}
