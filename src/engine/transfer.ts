/**
 * Moving a store's contents to another store, of the same backend or another (`telha export`,
 * `telha import`): RocksDB into PostgreSQL when one server is no longer enough, and back.
 *
 * The stream is newline-delimited JSON: a header naming the format and its version, one line
 * per job, schedule, pause and kind limit, and a last line counting them, so a stream cut short
 * is told from a whole one. Each record travels as the store's own value bytes (base64): the
 * spec's `[version][msgpack]` envelope for a job, and the codecs' values of the others. So the
 * stream holds every field as stored, ids, scopes, states, priorities, gates, attempts, lease
 * generations and holders, deadlines, events, results and checkpoints, and the codecs that read
 * stored rows validate it. The transitions log does not travel: its entries are the history of
 * the store they happened in, and a Watch resume token names that store.
 *
 * An import reads the stream twice: first it decodes and checks every line, and only a stream
 * whole and valid from its header to its last line is written, so a malformed one changes
 * nothing.
 */
import type { Clock } from '../core/clock.ts';
import { ErrorCode, invalidArgument, isTelhaError, TelhaError } from '../core/errors.ts';
import type { KindLimit } from '../core/kind-limits.ts';
import type { Pause } from '../core/pauses.ts';
import type { Schedule } from '../core/schedules.ts';
import { ANY_SCOPE, type JobRecord } from '../core/types.ts';
import { decodeKindLimit, encodeKindLimit } from '../codec/kind-limits.ts';
import { decodePause, encodePause } from '../codec/pauses.ts';
import { decodeSchedule, encodeSchedule } from '../codec/schedules.ts';
import { decodeRecord, encodeRecord, VALUE_VERSION } from '../codec/value.ts';
import type { JobStore } from '../storage/types.ts';

/** The header's `format`, and the version this build writes and reads. */
export const EXPORT_FORMAT = 'telha-export';
export const EXPORT_VERSION = 1;
/** Jobs read, and written, per call on the store. */
const PAGE = 1000;
/** No bound on what an import stores: the source store held it already. */
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

const KINDS = ['job', 'schedule', 'pause', 'limit'] as const;
type RecordKind = (typeof KINDS)[number];

/** How many of each kind a stream holds (its last line), or an import wrote. */
export type TransferCounts = Record<RecordKind, number>;

/** What an import did: of each kind, how many were written and how many the target held already (`merge`). */
export interface ImportSummary {
  readonly written: TransferCounts;
  readonly skipped: TransferCounts;
}

function zero(): TransferCounts {
  return { job: 0, schedule: 0, pause: 0, limit: 0 };
}

function line(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}

function item(type: RecordKind, value: Buffer): string {
  return line({ type, value: value.toString('base64') });
}

/**
 * Write every job, schedule, pause and kind limit of `store` to `write`, a line at a time. Run
 * it on a store nothing writes to meanwhile (servers stopped): jobs are read a page at a time,
 * and one that changes state between pages may be read twice or not at all.
 */
export async function exportStore(
  store: JobStore,
  write: (text: string) => Promise<void> | void,
  clock: Clock,
): Promise<TransferCounts> {
  const counts = zero();
  await write(
    line({
      format: EXPORT_FORMAT,
      version: EXPORT_VERSION,
      valueVersion: VALUE_VERSION,
      backend: store.backend,
      exportedAt: clock.now(),
    }),
  );
  // Limits and pauses first: a store files a job under the lane and pauses it finds when the job
  // is written (PostgreSQL's `lane` and `held` columns).
  for (const { kindPrefix, concurrency, rate, setAt, by } of await store.listKindLimits(clock.now())) {
    await write(item('limit', encodeKindLimit({ kindPrefix, concurrency, rate, setAt, by })));
    counts.limit++;
  }
  for (const pause of await store.listPauses(ANY_SCOPE)) {
    await write(item('pause', encodePause(pause)));
    counts.pause++;
  }
  let pageToken: string | null = null;
  do {
    const page = await store.listSchedules({ scope: ANY_SCOPE, limit: PAGE, pageToken });
    for (const schedule of page.schedules) await write(item('schedule', encodeSchedule(schedule)));
    counts.schedule += page.schedules.length;
    pageToken = page.nextPageToken;
  } while (pageToken !== null);
  do {
    // Every job, the system scope's too, oldest first: the order they were enqueued in.
    const page = await store.list({
      scope: ANY_SCOPE,
      state: null,
      kindPrefix: null,
      limit: PAGE,
      pageToken,
      order: 'oldest_first',
      includeSystem: true,
    });
    for (const job of page.jobs) await write(item('job', encodeRecord(job)));
    counts.job += page.jobs.length;
    pageToken = page.nextPageToken;
  } while (pageToken !== null);
  await write(line({ type: 'end', ...counts }));
  return counts;
}

type Decoded =
  | { readonly type: 'job'; readonly record: JobRecord }
  | { readonly type: 'schedule'; readonly record: Schedule }
  | { readonly type: 'pause'; readonly record: Pause }
  | { readonly type: 'limit'; readonly record: KindLimit };

/** A line past the header, decoded by the codec of its kind; throws naming what is wrong. */
function decodeItem(parsed: { type?: unknown; value?: unknown }, where: string): Decoded {
  if (typeof parsed.value !== 'string') throw new Error('has no value');
  const bytes = Buffer.from(parsed.value, 'base64');
  switch (parsed.type) {
    case 'job':
      return { type: 'job', record: decodeRecord(bytes, where) };
    case 'schedule':
      return { type: 'schedule', record: decodeSchedule(bytes, where) };
    case 'pause':
      return { type: 'pause', record: decodePause(bytes, where) };
    case 'limit':
      return { type: 'limit', record: decodeKindLimit(bytes, where) };
    default:
      throw new Error(`has an unknown type ${JSON.stringify(parsed.type)}`);
  }
}

/**
 * Each record of a stream, after checking its header; throws `invalid_argument` (field
 * `stream`) naming the line that is wrong, or a stream without its last line.
 */
async function* records(lines: AsyncIterable<string>): AsyncGenerator<Decoded> {
  let n = 0;
  const counted = zero();
  let end: Record<string, unknown> | null = null;
  for await (const text of lines) {
    n++;
    if (text.trim() === '') continue;
    const refuse = (what: string): TelhaError => invalidArgument('stream', `line ${n} ${what}`);
    if (end !== null) throw refuse('follows the last line');
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw refuse('is not JSON');
    }
    if (n === 1) {
      if (parsed['format'] !== EXPORT_FORMAT) throw refuse(`is not a ${EXPORT_FORMAT} header`);
      if (parsed['version'] !== EXPORT_VERSION) {
        throw refuse(`names format version ${String(parsed['version'])}; this build reads ${EXPORT_VERSION}`);
      }
      continue;
    }
    if (parsed['type'] === 'end') {
      end = parsed;
      continue;
    }
    let decoded: Decoded;
    try {
      decoded = decodeItem(parsed, `line ${n}`);
    } catch (error) {
      throw refuse((error as Error).message);
    }
    counted[decoded.type]++;
    yield decoded;
  }
  if (n === 0) throw invalidArgument('stream', 'is empty: it has no header');
  if (end === null) throw invalidArgument('stream', 'ends without its last line: it was cut short');
  for (const kind of KINDS) {
    if (end[kind] !== counted[kind]) {
      throw invalidArgument('stream', `holds ${counted[kind]} ${kind} lines, its last line says ${String(end[kind])}`);
    }
  }
}

/**
 * Write a stream `exportStore` made into `store`. `open` gives the stream's lines from the
 * start, each time it is called: the first read checks every line, the second writes. The
 * target must hold no jobs unless `merge`; then what it holds already (a job id or
 * idempotency key, a schedule's name in its scope, a pause, a kind limit's prefix) is kept and
 * the stream's record skipped.
 */
export async function importStore(
  store: JobStore,
  open: () => AsyncIterable<string>,
  options: { readonly merge: boolean },
  clock: Clock,
): Promise<ImportSummary> {
  const ids = new Set<string>();
  for await (const decoded of records(open())) {
    if (decoded.type !== 'job') continue;
    if (ids.has(decoded.record.jobId)) {
      throw invalidArgument('stream', `holds job ${decoded.record.jobId} twice`);
    }
    ids.add(decoded.record.jobId);
  }
  if (!options.merge) {
    const held = (await store.counts(ANY_SCOPE)).reduce((sum, row) => sum + row.count, 0);
    if (held > 0) {
      throw new TelhaError(
        ErrorCode.FailedPrecondition,
        `the target store holds ${held} jobs: import into an empty store, or pass --merge to keep them and add the rest`,
      );
    }
  }
  const written = zero();
  const skipped = zero();
  const limits = new Set((await store.listKindLimits(clock.now())).map((l) => l.kindPrefix));
  let jobs: JobRecord[] = [];
  const flush = async (): Promise<void> => {
    const outcome = await store.importJobs(jobs, clock.now());
    written.job += outcome.written;
    skipped.job += outcome.skipped;
    jobs = [];
  };
  for await (const decoded of records(open())) {
    switch (decoded.type) {
      case 'job':
        jobs.push(decoded.record);
        if (jobs.length === PAGE) await flush();
        break;
      case 'schedule':
        try {
          await store.createSchedule(decoded.record, UNBOUNDED);
          written.schedule++;
        } catch (error) {
          if (!isTelhaError(error, ErrorCode.FailedPrecondition)) throw error;
          skipped.schedule++;
        }
        break;
      case 'pause': {
        const stored = await store.pauseKinds(decoded.record, { maxPerScope: UNBOUNDED, maxTotal: UNBOUNDED });
        if (stored.pausedAt === decoded.record.pausedAt && stored.by === decoded.record.by) written.pause++;
        else skipped.pause++;
        break;
      }
      case 'limit':
        if (limits.has(decoded.record.kindPrefix)) {
          skipped.limit++;
        } else {
          await store.setKindLimit(decoded.record, UNBOUNDED);
          written.limit++;
        }
        break;
    }
  }
  await flush();
  return { written, skipped };
}
