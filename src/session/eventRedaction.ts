/** Secrets masked in events before anyone hears them. */
import type { SessionEvent } from '../events.js';
import type { ChatMessage } from '../history/messages.js';
import type { Redact } from '../secrets/redact.js';

/**
 * The event with secrets masked in what servers, tools and the model said: error
 * messages, text, tool arguments and outputs. (A key split across text deltas is caught
 * before this, by the llm actor's stream window: see streamRedactor.)
 */
export function redactEvent(event: SessionEvent, redact: Redact): SessionEvent {
  switch (event.type) {
    case 'message_delta':
      return { ...event, delta: redact(event.delta) };
    case 'message_end':
      return { ...event, message: redactMessage(event.message, redact) };
    case 'tool_start':
      return { ...event, callId: redact(event.callId), name: redact(event.name), arguments: redact(event.arguments) };
    case 'tool_end':
      return { ...event, callId: redact(event.callId), name: redact(event.name), content: redact(event.content) };
    case 'turn_end':
      return {
        ...event,
        text: redact(event.text),
        ...(event.error ? { error: { ...event.error, message: redact(event.error.message) } } : {}),
      };
    case 'turn_start':
    case 'prompt_dropped':
      return { ...event, text: redact(event.text) };
    case 'retry':
    case 'error':
      return { ...event, error: { ...event.error, message: redact(event.error.message) } };
    default:
      return event;
  }
}

/** The message with secrets masked in its text, tool names, call ids and arguments; the same object when there are none. */
function redactMessage(message: ChatMessage, redact: Redact): ChatMessage {
  const content = typeof message.content === 'string' ? redact(message.content) : message.content;
  const calls = message.role === 'assistant' ? message.tool_calls : undefined;
  const cleanCalls = calls?.map((c) => {
    const [id, name, args] = [redact(c.id), redact(c.function.name), redact(c.function.arguments)];
    return id === c.id && name === c.function.name && args === c.function.arguments
      ? c
      : { ...c, id, function: { ...c.function, name, arguments: args } };
  });
  const callId = message.role === 'tool' ? redact(message.tool_call_id) : undefined;
  if (
    content === message.content &&
    (!calls || cleanCalls!.every((c, i) => c === calls[i])) &&
    (message.role !== 'tool' || callId === message.tool_call_id)
  )
    return message;
  return {
    ...message,
    content,
    ...(cleanCalls ? { tool_calls: cleanCalls } : {}),
    ...(callId ? { tool_call_id: callId } : {}),
  } as ChatMessage;
}
