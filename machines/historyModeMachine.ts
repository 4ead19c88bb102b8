/**
 * Which history a request carries. phase1: history + working memory. phase2: working
 * memory + the active turn only, once overview.md is effectively maintained (differs
 * from the template, has real content, and the model has written it at least once).
 * hybrid: working memory + the last N messages, when the memory becomes nearly empty.
 * A mode can be pinned (`injectHistory: true` pins phase1); unpinning decides afresh.
 */
import { assign, emit, setup } from 'xstate';
import type { HistoryMode } from '../src/history/historyView.js';
import type { MemoryHealth } from '../src/memory/memoryTemplate.js';

/** Characters of real content (outside comments and headings) that count as maintained. */
export const MAINTAINED_MIN_CHARS = 20;
/** Below this the memory is nearly empty and phase 2 would lose context. */
export const NEARLY_EMPTY_CHARS = 10;

export interface HistoryModeInput {
  /** The mode a resumed session was in. */
  restored: HistoryMode;
  pinned: HistoryMode | null;
  health: MemoryHealth;
  modelWrites: number;
}

export interface HistoryModeContext {
  pinned: HistoryMode | null;
  restored: HistoryMode;
  health: MemoryHealth;
  modelWrites: number;
}

export type HistoryModeEvent =
  { type: 'memory.evaluate'; health: MemoryHealth; modelWrites: number } | { type: 'mode.pin'; mode: HistoryMode } | { type: 'mode.unpin' };

export interface ModeAnnouncement {
  type: 'mode';
  mode: HistoryMode;
  pinned: boolean;
}

export function isMaintained(health: MemoryHealth, modelWrites: number): boolean {
  return health.differsFromTemplate && health.contentChars >= MAINTAINED_MIN_CHARS && modelWrites >= 1;
}

export const historyModeMachine = setup({
  types: {
    context: {} as HistoryModeContext,
    input: {} as HistoryModeInput,
    events: {} as HistoryModeEvent,
    emitted: {} as ModeAnnouncement,
  },
  actions: {
    /** Tells the owner the current mode; the session machine overrides it with sendParent. */
    announce: emit((_, params: ModeAnnouncement) => params),
    takeEvaluation: assign(({ event }) =>
      event.type === 'memory.evaluate' ? { health: event.health, modelWrites: event.modelWrites } : {},
    ),
    takePin: assign(({ event }) => (event.type === 'mode.pin' ? { pinned: event.mode } : {})),
    clearPin: assign({ pinned: null }),
  },
  guards: {
    maintained: ({ context }) => isMaintained(context.health, context.modelWrites),
    nowMaintained: ({ event }) => event.type === 'memory.evaluate' && isMaintained(event.health, event.modelWrites),
    nowNearlyEmpty: ({ event }) => event.type === 'memory.evaluate' && event.health.contentChars < NEARLY_EMPTY_CHARS,
    pinned: ({ context }) => context.pinned !== null,
    pinnedPhase1: ({ context }) => context.pinned === 'phase1',
    pinnedPhase2: ({ context }) => context.pinned === 'phase2',
    restoredPhase2: ({ context }) => context.restored === 'phase2',
    restoredHybrid: ({ context }) => context.restored === 'hybrid',
  },
}).createMachine({
  id: 'historyMode',
  context: ({ input }) => ({ ...input }),
  initial: 'restoring',
  states: {
    restoring: {
      always: [
        { guard: 'pinned', target: 'pinned' },
        { guard: 'restoredPhase2', target: 'auto.phase2' },
        { guard: 'restoredHybrid', target: 'auto.hybrid' },
        { target: 'auto.phase1' },
      ],
    },
    auto: {
      initial: 'deciding',
      on: {
        'mode.pin': { target: 'pinned', actions: 'takePin' },
      },
      states: {
        deciding: {
          always: [{ guard: 'maintained', target: 'phase2' }, { target: 'phase1' }],
        },
        phase1: {
          entry: { type: 'announce', params: { type: 'mode', mode: 'phase1', pinned: false } },
          on: {
            'memory.evaluate': [{ guard: 'nowMaintained', target: 'phase2', actions: 'takeEvaluation' }, { actions: 'takeEvaluation' }],
          },
        },
        phase2: {
          entry: { type: 'announce', params: { type: 'mode', mode: 'phase2', pinned: false } },
          on: {
            'memory.evaluate': [{ guard: 'nowNearlyEmpty', target: 'hybrid', actions: 'takeEvaluation' }, { actions: 'takeEvaluation' }],
          },
        },
        hybrid: {
          entry: { type: 'announce', params: { type: 'mode', mode: 'hybrid', pinned: false } },
          on: {
            'memory.evaluate': [{ guard: 'nowMaintained', target: 'phase2', actions: 'takeEvaluation' }, { actions: 'takeEvaluation' }],
          },
        },
      },
    },
    pinned: {
      initial: 'choosing',
      on: {
        'mode.pin': { target: 'pinned', reenter: true, actions: 'takePin' },
        'mode.unpin': { target: 'auto', actions: 'clearPin' },
        'memory.evaluate': { actions: 'takeEvaluation' },
      },
      states: {
        choosing: {
          always: [{ guard: 'pinnedPhase1', target: 'phase1' }, { guard: 'pinnedPhase2', target: 'phase2' }, { target: 'hybrid' }],
        },
        phase1: { entry: { type: 'announce', params: { type: 'mode', mode: 'phase1', pinned: true } } },
        phase2: { entry: { type: 'announce', params: { type: 'mode', mode: 'phase2', pinned: true } } },
        hybrid: { entry: { type: 'announce', params: { type: 'mode', mode: 'hybrid', pinned: true } } },
      },
    },
  },
});
