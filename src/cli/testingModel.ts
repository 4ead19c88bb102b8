/**
 * `testing:<profile>` as a model, on every command that takes one (chat, run, rpc, eval, and
 * serve's --upstream): the built-in test server plays the behaviour profile offline, with no
 * key, and the real openai client speaks to it over HTTP as it would to a provider. This is
 * the one place that decides what such a name means.
 */
import { BEHAVIOUR_PROFILES, behaviourProfile, startTestServer, type BehaviourProfile, type TestServer } from '../testing/index.js';
import { UsageError } from './usageError.js';

const PREFIX = 'testing:';

/** `testing:<profile>` → the profile; any other name → null. `flag` names where the name came from, for the error. */
export function testingProfile(model: string, flag = '--model'): BehaviourProfile | null {
  if (!model.startsWith(PREFIX)) return null;
  const name = model.slice(PREFIX.length);
  if (!(BEHAVIOUR_PROFILES as readonly string[]).includes(name))
    throw new UsageError(
      `${flag} ${model}: no such profile; the profiles are ${BEHAVIOUR_PROFILES.map((p) => `${PREFIX}${p}`).join(', ')}`,
    );
  return name as BehaviourProfile;
}

/** The test server playing `profile`, on 127.0.0.1: its baseURL takes any key. */
export function startTestingServer(profile: BehaviourProfile): Promise<TestServer> {
  return startTestServer({ policy: behaviourProfile(profile) });
}

/** The key a client sends to a testing server (it takes any). */
export const TESTING_KEY = 'testing';
