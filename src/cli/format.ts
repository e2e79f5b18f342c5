/** How the CLI prints jobs for a person (the `--json` forms print records as they are). */
import { duration } from '../util/durations.ts';
import { resultJsonText } from '../core/results.ts';
import { ORDER_WAIT } from '../core/ordered-keys.ts';
import { JOB_STATE_NAMES, JobState, type CountRow, type JobRecord, type Micros } from '../core/types.ts';

/** A time as every `telha` command prints it: `2026-12-04 20:58:36.123 UTC`. */
export function time(us: number): string {
  return new Date(Math.floor(us / 1000)).toISOString().replace('T', ' ').replace('Z', ' UTC');
}

export { duration } from '../util/durations.ts';

/** Payload preview: text when it is printable UTF-8, else hex; cut at 200 characters. */
export function preview(bytes: Uint8Array): string {
  if (bytes.byteLength === 0) return '(empty)';
  const text = Buffer.from(bytes).toString('utf8');
  // eslint-disable-next-line no-control-regex
  const printable = !text.includes('\uFFFD') && !/[\x00-\x08\x0e-\x1f]/.test(text);
  const shown = printable ? text : `hex ${Buffer.from(bytes).toString('hex')}`;
  return shown.length > 200 ? `${shown.slice(0, 200)}… (${bytes.byteLength} bytes)` : shown;
}

/**
 * A result: its JSON text when it is UTF-8 JSON (what the SDK stores), else its size and the
 * first bytes as base64, since a raw result is usually not for reading.
 */
export function resultPreview(result: Uint8Array): string {
  const text = resultJsonText(result);
  if (text !== null) return text.length > 200 ? `${text.slice(0, 200)}… (${result.byteLength} bytes)` : text;
  const base64 = Buffer.from(result.subarray(0, 150)).toString('base64');
  return `${result.byteLength} bytes, base64 ${base64}${result.byteLength > 150 ? '…' : ''}`;
}

/**
 * Why a Pending job waits, from the event that last put it back: a gate set at
 * enqueue is the delay the producer asked for, one set by a failure or a reaped
 * lease is backoff. Only a gate still closed at `now` is shown.
 */
function pending(job: JobRecord, now: Micros): string {
  if (job.notBefore === null || job.notBefore <= now) return 'pending, ready to lease';
  if (job.notBefore === ORDER_WAIT) return `pending, waiting for its turn in order key ${job.orderKey ?? ''}`;
  const last = job.events[job.events.length - 1]?.transition;
  const why = last === 'enqueued' ? ' (delay)' : last === 'failed' || last === 'reaped' ? ' (backoff)' : '';
  return `pending, gated until ${time(job.notBefore)}${why}, in ${duration(job.notBefore - now)}`;
}

const SUMMARY: Readonly<Record<JobState, (job: JobRecord, now: Micros) => string>> = {
  [JobState.Pending]: pending,
  [JobState.Leased]: (j) =>
    `leased by ${j.workerId ?? '?'} (generation ${j.leaseGeneration}), lease until ${j.leaseDeadline === null ? '?' : time(j.leaseDeadline)}` +
    (j.attemptDeadline === null ? '' : `, times out at ${time(j.attemptDeadline)}`),
  [JobState.Completed]: () => 'completed',
  [JobState.Failed]: () => 'failed (reserved state)',
  [JobState.Dead]: (j) =>
    `DEAD after ${j.attempts} attempt${j.attempts === 1 ? '' : 's'}: retry with \`telha jobs retry ${j.jobId}\``,
  [JobState.Cancelled]: (j) => `cancelled: retry with \`telha jobs retry ${j.jobId}\``,
};

/** `telha jobs show`: the whole lifecycle, readable at 2 am. */
export function formatShow(job: JobRecord & { effectiveMaxAttempts: number }, now: Micros): string {
  const lines = [
    `job        ${job.jobId}`,
    `kind       ${job.kind}`,
    `scope      ${job.tenant === null ? 'system' : `tenant ${job.tenant}`}`,
    `state      ${SUMMARY[job.state](job, now)}`,
    `attempts   ${job.attempts} of ${job.effectiveMaxAttempts}`,
    `priority   ${job.priority}`,
    `created    ${time(job.createdAt)}`,
  ];
  if (job.idempotencyKey !== null) lines.push(`idem key   ${job.idempotencyKey}`);
  if (job.supersedeKey !== null) lines.push(`supersede  ${job.supersedeKey}`);
  if (job.supersededBy !== null) lines.push(`replaced   by ${job.supersededBy} (superseded)`);
  if (job.orderKey !== null) {
    const policy = job.orderReleaseOnDead ? 'releases it when dead' : 'blocks it when dead';
    lines.push(`order key  ${job.orderKey} (${policy})`);
  }
  if (job.timeoutSecs !== null) lines.push(`timeout    ${duration(job.timeoutSecs * 1_000_000)} per attempt`);
  lines.push(`payload    ${preview(job.payload)}`);
  if (job.continuation !== null) lines.push(`checkpoint ${preview(job.continuation)}`);
  if (job.progress !== null) lines.push(`progress   ${job.progress}`);
  if (job.result !== null) lines.push(`result     ${resultPreview(job.result)}`);
  lines.push('', 'lifecycle');
  let previous = job.createdAt;
  for (const e of job.events) {
    if (e.transition === 'stats') {
      // A fold, not a moment: it stands where the folded events were but is stamped when it folded
      // (later than the events after it), so it gets no time and moves no gap.
      lines.push(
        `  ${'(folded)'.padEnd(time(e.at).length)}  ${''.padStart(9)}  ${e.transition.padEnd(10)} ${e.detail ?? ''}`,
      );
      continue;
    }
    const gap = e.at - previous;
    previous = e.at;
    lines.push(
      `  ${time(e.at)}  ${`+${duration(gap)}`.padStart(9)}  ${e.transition.padEnd(10)} ${e.detail ?? ''}`.trimEnd(),
    );
  }
  const last = job.events[job.events.length - 1];
  if (last) lines.push(`  (${duration(last.at - job.createdAt)} from enqueue to last event)`);
  return lines.join('\n');
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export function formatList(jobs: readonly JobRecord[]): string {
  if (jobs.length === 0) return '(no jobs)';
  return table(
    ['JOB', 'STATE', 'KIND', 'SCOPE', 'PRI', 'ATTEMPTS', 'CREATED'],
    jobs.map((j) => [
      j.jobId,
      JOB_STATE_NAMES[j.state],
      j.kind,
      j.tenant ?? 'system',
      String(j.priority),
      String(j.attempts),
      time(j.createdAt),
    ]),
  );
}

export function formatStats(rows: readonly CountRow[]): string {
  if (rows.length === 0) return '(no jobs)';
  const byState = new Map<JobState, number>();
  for (const r of rows) byState.set(r.state, (byState.get(r.state) ?? 0) + r.count);
  const totals = [...byState.entries()].map(([s, n]) => `${JOB_STATE_NAMES[s]} ${n}`).join(', ');
  return `${table(
    ['STATE', 'KIND', 'COUNT'],
    rows.map((r) => [JOB_STATE_NAMES[r.state], r.kind, String(r.count)]),
  )}\n\ntotal: ${totals}`;
}

/** A record for `--json`: bytes as base64 plus a UTF-8 copy when it reads as text, state by name. */
export function jobJson(job: JobRecord): object {
  const text = (b: Uint8Array | null): string | null => {
    if (b === null) return null;
    const s = Buffer.from(b).toString('utf8');
    return s.includes('\uFFFD') ? null : s;
  };
  return {
    ...job,
    state: JOB_STATE_NAMES[job.state],
    payload: Buffer.from(job.payload).toString('base64'),
    payloadText: text(job.payload),
    continuation: job.continuation === null ? null : Buffer.from(job.continuation).toString('base64'),
    result: job.result === null ? null : Buffer.from(job.result).toString('base64'),
    resultText: job.result === null ? null : resultJsonText(job.result),
  };
}

/** Rows as aligned columns, two spaces apart, the first row the heading; no trailing spaces. */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((row) => (row[c] ?? '').length))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, c) => cell.padEnd(widths[c] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
