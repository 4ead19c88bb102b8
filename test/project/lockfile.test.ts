/**
 * A fresh clone installs clean and quiet: `npm install` rewrites package-lock.json when its
 * root entry no longer says what package.json says (the `ai` peer was missing), and npm 11
 * warns about every dependency's install script that `allowScripts` neither allows nor denies.
 * Both are read here from the two files, without installing anything.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (name: string) => JSON.parse(readFileSync(join(ROOT, name), 'utf8')) as Record<string, unknown>;

describe('package-lock.json', () => {
  it('round 3 new user: its root entry says what package.json says, so npm install leaves it as it is', () => {
    const manifest = read('package.json');
    const root = (read('package-lock.json').packages as Record<string, Record<string, unknown>>)[''];
    for (const key of [
      'name',
      'version',
      'license',
      'bin',
      'engines',
      'dependencies',
      'devDependencies',
      'peerDependencies',
      'peerDependenciesMeta',
    ])
      expect(root?.[key], key).toEqual(manifest[key]);
  });

  it('round 3 new user: every install script in the tree is allowed or denied by allowScripts, so npm prints no warning of ours', () => {
    const allowed = read('package.json').allowScripts as Record<string, boolean>;
    const packages = read('package-lock.json').packages as Record<string, { hasInstallScript?: boolean }>;
    const withScripts = Object.entries(packages)
      .filter(([, entry]) => entry.hasInstallScript)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(withScripts.length).toBeGreaterThan(0); // sqlite3, built from source
    expect(withScripts.filter((name) => typeof allowed[name] !== 'boolean')).toEqual([]);
  });
});
