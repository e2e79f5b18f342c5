/**
 * The plain-text report: one table per workload and tier, rows = systems,
 * then one "÷ best peer" row per Telha system, then footnotes and the
 * settings of every system.
 */
import { fmt, formatTable } from '../support.ts';
import { violations, type Cell, type Check, type SystemRun, type TierRun } from './results.ts';

export interface Column {
  readonly key: string;
  readonly label: string;
  readonly better: 'higher' | 'lower';
  readonly digits: number;
  /** False for context columns (fill time, ratios to another table, counts) that get no "÷ best peer" cell. */
  readonly ratio?: boolean;
}

export interface WorkloadSpec {
  readonly title: string;
  /** Lines under the title: what exactly was measured. */
  readonly about: readonly string[];
  readonly columns: readonly Column[];
  /** Names of the measurements whose exactly-once checks this table reports (none: no check column). */
  readonly checks: readonly string[];
}

/** The cell text: the number (with a footnote mark), or the reason there is none. */
function cellText(
  cell: Cell | undefined,
  column: Column,
  marks: Map<string, number>,
  footnotes: string[],
  who: string,
): string {
  if (cell === undefined) return '';
  let text = cell.text ?? fmt(cell.value, column.digits);
  if (cell.note !== undefined) {
    const note = `${who}, ${column.label}: ${cell.note}`;
    let mark = marks.get(note);
    if (mark === undefined) {
      footnotes.push(note);
      mark = footnotes.length;
      marks.set(note, mark);
    }
    text += ` [${mark}]`;
  }
  return text;
}

function checkText(checks: readonly Check[]): string {
  if (checks.length === 0) return '';
  const bad = checks.filter((c) => violations(c) > 0);
  const notReached = checks.reduce((s, c) => s + c.notReached, 0);
  if (bad.length > 0) {
    const sum = (f: (c: Check) => number): number => bad.reduce((s, c) => s + f(c), 0);
    const parts = [
      sum((c) => c.missing) > 0 ? `${fmt(sum((c) => c.missing))} missing` : '',
      sum((c) => c.twice) > 0 ? `${fmt(sum((c) => c.twice))} twice` : '',
      sum((c) => c.stray) > 0 ? `${fmt(sum((c) => c.stray))} stray` : '',
    ].filter(Boolean);
    return `VIOLATION: ${parts.join(', ')}`;
  }
  return notReached > 0 ? `ok (${fmt(notReached)} not reached: cap)` : 'ok';
}

/** Best peer (non-Telha) value of a column: the highest or lowest finite one. */
function bestPeer(systems: readonly SystemRun[], column: Column): { value: number; id: string } | null {
  let best: { value: number; id: string } | null = null;
  for (const s of systems) {
    if (s.isTelha) continue;
    const v = s.cells[column.key]?.value;
    if (v === undefined || !Number.isFinite(v) || v <= 0) continue;
    if (best === null || (column.better === 'higher' ? v > best.value : v < best.value)) best = { value: v, id: s.id };
  }
  return best;
}

export function renderWorkload(spec: WorkloadSpec, tiers: readonly TierRun[]): string {
  const lines: string[] = [`== ${spec.title}`, ...spec.about.map((l) => `   ${l}`)];
  const compared = spec.columns.filter((c) => c.ratio !== false);
  const direction = compared.every((c) => c.better === 'higher')
    ? '÷ best peer > 1: Telha is faster'
    : compared.every((c) => c.better === 'lower')
      ? '÷ best peer < 1: Telha is faster'
      : '÷ best peer: > 1 is better for Telha in jobs/s columns, < 1 in time columns';
  for (const run of tiers) {
    const systems = run.systems.filter((s) => spec.columns.some((c) => s.cells[c.key] !== undefined));
    if (systems.length === 0) continue;
    const footnotes: string[] = [];
    const marks = new Map<string, number>();
    const headers = [
      'system',
      ...spec.columns.map((c) => c.label),
      ...(spec.checks.length > 0 ? ['exactly once'] : []),
    ];
    const rows = systems.map((s) => [
      s.label,
      ...spec.columns.map((c) => cellText(s.cells[c.key], c, marks, footnotes, s.label)),
      ...(spec.checks.length > 0 ? [checkText(s.checks.filter((k) => spec.checks.includes(k.measurement)))] : []),
    ]);
    for (const telha of systems.filter((s) => s.isTelha)) {
      rows.push([
        `${telha.label} ÷ best peer`,
        ...spec.columns.map((c) => {
          if (c.ratio === false) return '';
          const mine = telha.cells[c.key]?.value;
          const best = bestPeer(systems, c);
          if (mine === undefined || !Number.isFinite(mine) || best === null) return '-';
          return `${fmt(mine / best.value, 2)}x ${best.id}`;
        }),
        ...(spec.checks.length > 0 ? [''] : []),
      ]);
    }
    // Each table names its Node: tables are copied out one by one, and peers' releases follow the Node.
    lines.push(
      '',
      ` tier ${run.tier.title} | Node ${process.version}`,
      formatTable(headers, rows),
      `   (${direction})`,
    );
    for (const [i, note] of footnotes.entries()) lines.push(`   [${i + 1}] ${note}`);
  }
  return lines.join('\n');
}

/** Every system's settings per tier, and anything that failed. */
export function renderSettings(tiers: readonly TierRun[]): string {
  const lines: string[] = ['== settings of each system (everything not listed is at its defaults)'];
  for (const run of tiers) {
    lines.push('', ` tier ${run.tier.id} (${Math.round(run.seconds)} s)`);
    for (const s of run.systems) {
      lines.push(
        `   ${s.label} (load average ${fmt(s.load.start, 2)} → ${fmt(s.load.end, 2)}): ${s.settings.join('; ')}`,
      );
      for (const e of s.errors) lines.push(`     ERROR ${e}`);
    }
  }
  return lines.join('\n');
}

export function renderViolations(tiers: readonly TierRun[]): string {
  const bad: string[] = [];
  for (const run of tiers)
    for (const s of run.systems)
      for (const c of s.checks)
        if (violations(c) > 0)
          bad.push(
            `   ${run.tier.id} / ${s.label} / ${c.measurement}: ${c.missing} missing, ${c.twice} twice, ${c.stray} stray of ${c.expected}`,
          );
  return bad.length === 0
    ? '== exactly-once: every handler-running measurement ran each job exactly once (or hit its time cap, as marked)'
    : ['== EXACTLY-ONCE VIOLATIONS', ...bad].join('\n');
}
