/**
 * A middleware-driven session resumed by another process (the file store): the AI SDK's
 * streamText and LangChain's createAgent drive the first 20 turns of the garden conversation
 * here, close, and a child process (the built resumeChild.js: run `npm run build` first)
 * opens the same session with the host's saved messages and drives the other 20. The server
 * receives, byte for byte, the requests of the conversation driven without a break.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtFile } from '../reliability/built.js';
import { tempHome, testServers } from '../helpers.js';
import { driveDoor, policy, runDoor, type DoorName, type Drive } from './doors.js';
import { prompts } from './gardenConversation.js';

const serve = testServers();
const SPLIT = 20;

/** The child's run: its exit code, and what it drove (or its stderr). */
function child(drive: Drive): Promise<{ answers: string[]; memory: string; sessionId: string }> {
  const file = join(drive.home, 'drive.json');
  writeFileSync(file, JSON.stringify(drive));
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [builtFile('test/session/resumeChild.js'), file], { env: { PATH: process.env.PATH } });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => (stdout += d));
    proc.stderr.on('data', (d) => (stderr += d));
    proc.on('close', (code) => (code === 0 ? resolve(JSON.parse(stdout)) : reject(new Error(`resumeChild exited ${code}:\n${stderr}`))));
  });
}

describe('a middleware-driven session resumed by another process', () => {
  it.each<DoorName>(['streamText', 'createAgent (invoke)'])(
    '%s: the second process sends the requests of an unbroken run',
    async (door) => {
      const unbroken = await runDoor(door, tempHome());
      const server = await serve(policy(), { promptCaching: 'off' });
      const home = tempHome();
      const first = await driveDoor({ door, baseURL: server.baseURL, home, prompts: prompts().slice(0, SPLIT) });
      const firstRequests = server.requests.length;
      const second = await child({
        door,
        baseURL: server.baseURL,
        home,
        sessionId: first.sessionId,
        prompts: prompts().slice(SPLIT),
        held: first.held,
      });

      expect(second.sessionId).toBe(first.sessionId);
      expect(server.requests.length - firstRequests, 'requests from the second process').toBeGreaterThan(20);
      expect(server.requests.length).toBe(unbroken.requests.length);
      server.requests.forEach((r, i) => expect(JSON.stringify(r.body), `${door}: request ${i + 1}`).toBe(unbroken.requests[i]));
      expect([...first.answers, ...second.answers]).toEqual(unbroken.answers);
      expect(second.memory).toBe(unbroken.memory);
    },
  );
});
