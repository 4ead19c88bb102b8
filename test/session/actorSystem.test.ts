import { describe, expect, it } from 'vitest';
import { assign, createActor, fromPromise, setup, toPromise } from 'xstate';
import { skipActorRegistry } from '../../src/session/actorSystem.js';

// What the session relies on from xstate once its system keeps no Map of its actors:
// children still start, report and stop, and actors with a system id are still found.
const child = setup({}).createMachine({
  id: 'child',
  initial: 'waiting',
  states: { waiting: { on: { go: 'finished' } }, finished: { type: 'final' } },
  output: () => 'child done',
});

const parent = setup({
  actors: { work: fromPromise(async ({ input }: { input: number }) => input * 2), child },
}).createMachine({
  id: 'parent',
  context: { doubled: [] as number[], childOutput: '' },
  initial: 'working',
  states: {
    working: {
      invoke: {
        src: 'work',
        input: ({ context }) => context.doubled.length + 1,
        onDone: [
          {
            guard: ({ context }) => context.doubled.length < 20,
            target: 'working',
            reenter: true,
            actions: assign({ doubled: ({ context, event }) => [...context.doubled, event.output] }),
          },
          { target: 'waiting', actions: assign({ doubled: ({ context, event }) => [...context.doubled, event.output] }) },
        ],
      },
    },
    waiting: {
      invoke: {
        src: 'child',
        systemId: 'theChild',
        onDone: { target: 'done', actions: assign({ childOutput: ({ event }) => event.output }) },
      },
    },
    done: { type: 'final' },
  },
  output: ({ context }) => context,
});

describe('skipActorRegistry', () => {
  it('leaves children starting, finishing and found by system id', async () => {
    const actor = createActor(parent);
    skipActorRegistry(actor.system);
    actor.start();
    await new Promise<void>((resolve) => {
      const sub = actor.subscribe((snapshot) => {
        if (snapshot.matches('waiting')) {
          sub.unsubscribe();
          resolve();
        }
      });
    });
    const found = actor.system.get('theChild');
    expect(found).toBeDefined();
    found!.send({ type: 'go' });
    const output = (await toPromise(actor)) as { doubled: number[]; childOutput: string };
    expect(output.doubled).toEqual(Array.from({ length: 21 }, (_, i) => (i + 1) * 2));
    expect(output.childOutput).toBe('child done');
    // A finished child gives its system id back.
    expect(actor.system.get('theChild')).toBeUndefined();
  });

  it('does nothing to a system without the registration it skips', () => {
    const system = { get: () => undefined };
    skipActorRegistry(system);
    expect(Object.keys(system)).toEqual(['get']);
  });
});
