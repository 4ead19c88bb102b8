/**
 * Seeded damage to an SSE byte stream, for fuzzing the client side: bytes flipped,
 * spans dropped or repeated, garbage and stray events inserted, the stream cut short.
 * The same seed always does the same damage, so a failing case can be replayed.
 */
export interface Corruption {
  /** What was done, for reports ("flip@812, cut@1400"). */
  steps: string[];
  bytes: Buffer;
  /** End by destroying the socket (a reset) rather than a clean end. */
  reset: boolean;
}

const GARBAGE = [
  'data: {this is not json\n\n',
  'data: {"choices":[{"index":0,"delta":{"content":123}}]}\n\n',
  'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":7,"function":{"arguments":"{"}}]}}]}\n\n',
  'event: error\ndata: {"error":{"message":"upstream failed","type":"server_error"}}\n\n',
  'data: [DONE]\n\n',
  ': keep-alive comment\n\n',
  'data: null\n\n',
  'data: {"choices":null}\n\n',
  'data: {"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":"tool_calls"}]}\n\n',
  '\r\n\r\n\r\n',
  'data: \u0000\u0001\u0002\n\n',
];

export function corruptStream(input: Buffer, seed: number): Corruption {
  const rand = mulberry32(seed);
  const int = (n: number): number => Math.floor(rand() * n);
  let bytes = Buffer.from(input);
  const steps: string[] = [];
  const count = 1 + int(4);
  for (let k = 0; k < count && bytes.length > 0; k++) {
    const at = int(bytes.length);
    switch (int(7)) {
      case 0: {
        bytes[at] = int(256);
        steps.push(`flip@${at}`);
        break;
      }
      case 1: {
        const len = 1 + int(64);
        bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + len)]);
        steps.push(`drop${len}@${at}`);
        break;
      }
      case 2: {
        const len = 1 + int(200);
        bytes = Buffer.concat([bytes.subarray(0, at + len), bytes.subarray(at, at + len), bytes.subarray(at + len)]);
        steps.push(`repeat${len}@${at}`);
        break;
      }
      case 3: {
        const garbage = Buffer.from(GARBAGE[int(GARBAGE.length)]!);
        bytes = Buffer.concat([bytes.subarray(0, at), garbage, bytes.subarray(at)]);
        steps.push(`insert@${at}`);
        break;
      }
      case 4: {
        const invalid = Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xe2, 0x82].slice(0, 1 + int(6)));
        bytes = Buffer.concat([bytes.subarray(0, at), invalid, bytes.subarray(at)]);
        steps.push(`badutf8@${at}`);
        break;
      }
      case 5: {
        bytes = bytes.subarray(0, at);
        steps.push(`cut@${at}`);
        break;
      }
      default: {
        const line = Buffer.from(`data: {"choices":[{"index":0,"delta":{"content":"${'x'.repeat(50_000 + int(100_000))}"}}]}\n\n`);
        bytes = Buffer.concat([bytes.subarray(0, at), line, bytes.subarray(at)]);
        steps.push(`bigline@${at}`);
      }
    }
  }
  return { steps, bytes, reset: rand() < 0.3 };
}

/** Split for writing in uneven pieces (events cut across TCP writes). */
export function pieces(bytes: Buffer, seed: number): Buffer[] {
  const rand = mulberry32(seed ^ 0x9e3779b9);
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length;) {
    const len = 1 + Math.floor(rand() * 300);
    out.push(bytes.subarray(i, i + len));
    i += len;
  }
  return out;
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
