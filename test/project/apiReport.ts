/**
 * The API report: for each package entry, API Extractor's summary of what it exports, from
 * the built declarations (dist/). Checked in under api/, so a change to the public surface
 * is a visible diff; `npm run api` writes them anew after a deliberate change.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CompilerState, Extractor, ExtractorConfig } from '@microsoft/api-extractor';

/** The project's folder: run from test/ (vitest) or from dist/test/ (npm run api). */
export const ROOT = ((dir: string): string => {
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
})(import.meta.dirname);

/** Each entry of package.json "exports", by the name of its report. */
export const ENTRIES: Record<string, string> = {
  workmem: 'dist/src/index.d.ts',
  'workmem-machines': 'dist/machines/index.d.ts',
  'workmem-postgres': 'dist/src/storage/postgres/index.d.ts',
  'workmem-ai-sdk': 'dist/src/aiSdk/index.d.ts',
  'workmem-langchain': 'dist/src/langchain/index.d.ts',
  'workmem-testing': 'dist/src/testing/index.d.ts',
  'workmem-eval': 'dist/src/eval/index.d.ts',
};

export interface ReportOutcome {
  entry: string;
  /** The report differs from the one checked in (or there was none). */
  changed: boolean;
  errors: string[];
}

/**
 * One TypeScript program for every entry, made on the first report and reused: each made
 * its own (the whole project, seconds each) when the entries were not given to it together.
 */
let compilerState: CompilerState | null = null;

/** Runs API Extractor on one entry; `update` writes the report into api/ instead of comparing. */
export function apiReport(entry: string, update: boolean): ReportOutcome {
  const temp = mkdtempSync(join(tmpdir(), 'workmem-api-'));
  try {
    const config = ExtractorConfig.prepare({
      configObject: {
        projectFolder: ROOT,
        mainEntryPointFilePath: join(ROOT, ENTRIES[entry]!),
        compiler: { tsconfigFilePath: join(ROOT, 'tsconfig.json') },
        apiReport: { enabled: true, reportFileName: entry, reportFolder: join(ROOT, 'api'), reportTempFolder: temp },
        docModel: { enabled: false },
        dtsRollup: { enabled: false },
        tsdocMetadata: { enabled: false },
        messages: {
          // What the report shows: an export without a TSDoc line says "(undocumented)" there. Release tags are not used.
          extractorMessageReporting: { default: { logLevel: 'none' as never }, 'ae-missing-release-tag': { logLevel: 'none' as never } },
          compilerMessageReporting: { default: { logLevel: 'error' as never } },
          tsdocMessageReporting: { default: { logLevel: 'none' as never } },
        },
      },
      configObjectFullPath: join(ROOT, 'api', `${entry}.json`),
      packageJsonFullPath: join(ROOT, 'package.json'),
    });
    mkdirSync(join(ROOT, 'api'), { recursive: true });
    const errors: string[] = [];
    compilerState ??= CompilerState.create(config, { additionalEntryPoints: Object.values(ENTRIES).map((path) => join(ROOT, path)) });
    const result = Extractor.invoke(config, {
      localBuild: update,
      compilerState,
      messageCallback: (message) => {
        if (message.logLevel === 'error') errors.push(message.text);
        message.handled = true;
      },
    });
    // The order tsc prints an inferred union in (the machines' types) varies from build to build: not a change.
    const changed =
      result.apiReportChanged && (update || canonical(join(temp, `${entry}.api.md`)) !== canonical(join(ROOT, 'api', `${entry}.api.md`)));
    return { entry, changed, errors };
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

/**
 * A report's words and symbols, sorted: equal whatever order tsc printed a union's members in
 * and wherever it broke their lines; a name, a type or a member added, removed or changed is
 * still a change.
 */
function canonical(path: string): string {
  if (!existsSync(path)) return '';
  return (readFileSync(path, 'utf8').match(/"[^"]*"|[\w$]+|\S/g) ?? []).sort().join(' ');
}
