/**
 * The reliability matrix's rows and the table of docs/reliability.md: per fault, how
 * many were tried, how many the session survived (opened, consistent, working), and how
 * much acknowledged data was lost — which must be 0.
 */
export interface FaultRow {
  family: string;
  fault: string;
  tried: number;
  survived: number;
  /** Acknowledged messages missing or changed, plus torn files. */
  lost: number;
  note?: string;
}

/** A case that did not survive, with enough to replay it. */
export interface Failure {
  family: string;
  fault: string;
  detail: string;
}

export interface FamilyResult {
  rows: FaultRow[];
  failures: Failure[];
  /** Figures that are not pass/fail (heap growth, run time). */
  figures?: string[];
}

export function table(rows: FaultRow[]): string {
  const head = '| family | fault | tried | survived | data lost | |\n|---|---|---:|---:|---:|---|';
  const lines = rows.map((r) => `| ${r.family} | ${r.fault} | ${r.tried} | ${r.survived} | ${r.lost} | ${r.note ?? ''} |`);
  const total = rows.reduce((t, r) => ({ tried: t.tried + r.tried, survived: t.survived + r.survived, lost: t.lost + r.lost }), {
    tried: 0,
    survived: 0,
    lost: 0,
  });
  return [head, ...lines, `| **all** | | **${total.tried}** | **${total.survived}** | **${total.lost}** | |`].join('\n');
}

/** Group per-case outcomes into rows. */
export class Tally {
  private readonly rows = new Map<string, FaultRow>();
  readonly failures: Failure[] = [];

  constructor(private readonly family: string) {}

  add(fault: string, outcome: { survived: boolean; lost?: number; detail?: string }, note?: string): void {
    let row = this.rows.get(fault);
    if (!row) this.rows.set(fault, (row = { family: this.family, fault, tried: 0, survived: 0, lost: 0, ...(note ? { note } : {}) }));
    row.tried++;
    if (outcome.survived) row.survived++;
    row.lost += outcome.lost ?? 0;
    if (!outcome.survived || (outcome.lost ?? 0) > 0)
      this.failures.push({ family: this.family, fault, detail: outcome.detail ?? 'failed' });
  }

  result(figures?: string[]): FamilyResult {
    return { rows: [...this.rows.values()], failures: this.failures, ...(figures ? { figures } : {}) };
  }
}
