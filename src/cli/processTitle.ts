/**
 * A database URL given as --database-url sits in the process's command line, which every
 * local user can read (ps, /proc/<pid>/cmdline). The executable replaces its title before
 * anything else, with the URL as ***: on Linux, process.title overwrites the memory the
 * kernel shows as the command line (it can only shorten it, which suffices here).
 */

const FLAG = '--database-url';
const HIDDEN = '***';

/** The arguments with every --database-url value hidden; null when there is none to hide. */
export function withoutDatabaseUrl(args: readonly string[]): string[] | null {
  let hidden = false;
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      out.push(...args.slice(i));
      break;
    }
    if (arg === FLAG && i + 1 < args.length) {
      out.push(arg, HIDDEN);
      i++;
      hidden = true;
    } else if (arg.startsWith(`${FLAG}=`)) {
      out.push(`${FLAG}=${HIDDEN}`);
      hidden = true;
    } else {
      out.push(arg);
    }
  }
  return hidden ? out : null;
}

/** Replace the process title when the command line holds a database URL; true when it did. */
export function hideDatabaseUrl(args: readonly string[]): boolean {
  const shown = withoutDatabaseUrl(args);
  if (!shown) return false;
  process.title = ['workmem', ...shown].join(' ');
  return true;
}

export const DATABASE_URL_WARNING =
  'workmem: --database-url puts the password on the command line, where other local users can read it ' +
  '(ps, /proc/<pid>/cmdline) until workmem replaces its process title, as it now has, and in your shell history; ' +
  'give it as WORKMEM_DATABASE_URL or --database-url-file <path> instead\n';
