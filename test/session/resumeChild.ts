/**
 * A door's conversation carried on in a process of its own (doorResume.process.test.ts): the
 * drive (JSON, a file named on the command line) names the door, the server, the home, the
 * session and the host's messages so far; what it drove goes to stdout as JSON.
 */
import { readFileSync } from 'node:fs';
import { driveDoor, type Drive } from './doors.js';

const drive = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Drive;
const driven = await driveDoor(drive);
process.stdout.write(JSON.stringify({ answers: driven.answers, memory: driven.memory, sessionId: driven.sessionId }));
