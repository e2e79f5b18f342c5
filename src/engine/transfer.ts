/**
 * Moving a store's contents to another store, of the same backend or another (`telha export`,
 * `telha import`): RocksDB into PostgreSQL when one server is no longer enough, and back.
 *
 * The stream is newline-delimited JSON: a header naming the format and its version, one line
 * per job, schedule, pause, kind limit, tenant limit, ordered key's line and supersede key's
 * holder, and a last line counting them, so a stream cut short is told from a whole one. Each
 * record travels as the store's own value bytes (base64): the spec's `[version][msgpack]`
 * envelope for a job, and the codecs' values of schedules, pauses and limits. So the stream
 * holds every field as stored, ids, scopes, states, priorities, gates, attempts, lease
 * generations and holders, deadlines, events, results and checkpoints, and the codecs that read
 * stored rows validate it.
 *
 * What a store keeps about keys beside the records travels too (`JobStore.storedKeys`), as plain
 * JSON (every backend keeps it its own way, so there are no stored bytes to carry): each line
 * (`line`: its jobs' ids in order) and each holder (`holder`). It cannot be rebuilt from the
 * records: a job keeps its keys for life, after it has left its line (released by an operator,
 * or retried after it left) or let go of its supersede key, and a line's order is its enqueues'
 * commit order, which on PostgreSQL `created_at` does not give. Both are written after the jobs.
 *
 * Not carried: the transitions log (its entries are the history of the store they happened in,
 * and a Watch resume token names that store); limits' token buckets (they start full, as in a
 * reopened RocksDB store); the fair order's cursor and weighted turns (kept in memory, not
 * stored).
 *
 * An import reads the stream twice: first it decodes and checks every line, and only a stream
 * whole and valid from its header to its last line is written, so a malformed one changes
 * nothing.
 */
import type { Clock } from '../core/clock.ts';
import { ErrorCode, invalidArgument, isTelhaError, TelhaError } from '../core/errors.ts';
import type { KindLimit } from '../core/kind-limits.ts';
import { orderSlot } from '../core/ordered-keys.ts';
import type { Pause } from '../core/pauses.ts';
import type { Schedule } from '../core/schedules.ts';
import { holdsKeyIn, supersedeSlot } from '../core/supersede.ts';
import type { TenantLimit } from '../core/tenant-limits.ts';
import { ANY_SCOPE, type JobRecord } from '../core/types.ts';
import { decodeKindLimit, encodeKindLimit } from '../codec/kind-limits.ts';
import { decodePause, encodePause } from '../codec/pauses.ts';
import { decodeSchedule, encodeSchedule } from '../codec/schedules.ts';
import { decodeTenantLimit, encodeTenantLimit } from '../codec/tenant-limits.ts';
import { decodeRecord, encodeRecord, VALUE_VERSION } from '../codec/value.ts';
import type { JobStore, StoredHolder, StoredLine } from '../storage/types.ts';

/** The header's `format`, and the version this build writes. */
export const EXPORT_FORMAT = 'telha-export';
export const EXPORT_VERSION = 2;
/** Versions this build reads: 1 is 2 without tenant limits, lines and holders (it was written before them). */
const READ_VERSIONS: readonly unknown[] = [1, 2];
/** Jobs read, and written, per call on the store; lines and holders imported per call. */
const PAGE = 1000;
/** No bound on what an import stores: the source store held it already. */
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

const KINDS = ['job', 'schedule', 'pause', 'limit', 'tenant', 'line', 'holder'] as const;
type RecordKind = (typeof KINDS)[number];
/** The kinds a version 1 stream's last line does not count: it holds none. */
const SINCE_VERSION_2: readonly RecordKind[] = ['tenant', 'line', 'holder'];

/** How many of each kind a stream holds (its last line), or an import wrote. */
export type TransferCounts = Record<RecordKind, number>;

/** What an import did: of each kind, how many were written and how many the target held already (`merge`). */
export interface ImportSummary {
  readonly written: TransferCounts;
  readonly skipped: TransferCounts;
}

function zero(): TransferCounts {
  return { job: 0, schedule: 0, pause: 0, limit: 0, tenant: 0, line: 0, holder: 0 };
}

function line(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}

function item(type: RecordKind, value: Buffer | StoredLine | StoredHolder): string {
  return line({ type, value: Buffer.isBuffer(value) ? value.toString('base64') : value });
}

/**
 * Write every job, schedule, pause, limit, line and holder of `store` to `write`, a line at a time. Run
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
  for (const { tenant, concurrency, rate, weight, setAt, by } of await store.listTenantLimits(clock.now())) {
    await write(item('tenant', encodeTenantLimit({ tenant, concurrency, rate, weight, setAt, by })));
    counts.tenant++;
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
  // After the jobs: an import places the jobs it wrote.
  const keys = await store.storedKeys();
  for (const { tenant, key, ids } of keys.lines) await write(item('line', { tenant, key, ids }));
  counts.line += keys.lines.length;
  for (const { tenant, key, jobId } of keys.holders) await write(item('holder', { tenant, key, jobId }));
  counts.holder += keys.holders.length;
  await write(line({ type: 'end', ...counts }));
  return counts;
}

type Decoded =
  | { readonly type: 'job'; readonly record: JobRecord }
  | { readonly type: 'schedule'; readonly record: Schedule }
  | { readonly type: 'pause'; readonly record: Pause }
  | { readonly type: 'limit'; readonly record: KindLimit }
  | { readonly type: 'tenant'; readonly record: TenantLimit }
  | { readonly type: 'line'; readonly record: StoredLine }
  | { readonly type: 'holder'; readonly record: StoredHolder };

/** A decoded line and its number in the stream, for the messages of checks that span lines. */
type Numbered = Decoded & { readonly at: number };

/** The tenant and key of a `line` or `holder` value; throws naming what is wrong. */
function keyOf(value: Record<string, unknown>): { tenant: string | null; key: string } {
  const { tenant, key } = value;
  if (tenant !== null && (typeof tenant !== 'string' || tenant === '')) {
    throw new Error('names no tenant (a tenant, or null for the system scope)');
  }
  if (typeof key !== 'string' || key === '') throw new Error('names no key');
  return { tenant, key };
}

function decodeLine(value: Record<string, unknown>): StoredLine {
  const { ids } = value;
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === 'string')) {
    throw new Error('has no job ids');
  }
  return { ...keyOf(value), ids: ids };
}

function decodeHolder(value: Record<string, unknown>): StoredHolder {
  if (typeof value['jobId'] !== 'string') throw new Error('has no job id');
  return { ...keyOf(value), jobId: value['jobId'] };
}

/** A line past the header, decoded by the codec of its kind; throws naming what is wrong. */
function decodeItem(parsed: { type?: unknown; value?: unknown }, where: string): Decoded {
  if (parsed.type === 'line' || parsed.type === 'holder') {
    const value = parsed.value;
    if (typeof value !== 'object' || value === null) throw new Error('has no value');
    const fields = value as Record<string, unknown>;
    return parsed.type === 'line'
      ? { type: 'line', record: decodeLine(fields) }
      : { type: 'holder', record: decodeHolder(fields) };
  }
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
    case 'tenant':
      return { type: 'tenant', record: decodeTenantLimit(bytes, where) };
    default:
      throw new Error(`has an unknown type ${JSON.stringify(parsed.type)}`);
  }
}

/**
 * Each record of a stream, after checking its header; throws `invalid_argument` (field
 * `stream`) naming the line that is wrong, or a stream without its last line.
 */
async function* records(lines: AsyncIterable<string>): AsyncGenerator<Numbered> {
  let n = 0;
  let version: unknown = null;
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
      version = parsed['version'];
      if (!READ_VERSIONS.includes(version)) {
        throw refuse(`names format version ${String(version)}; this build reads ${READ_VERSIONS.join(' and ')}`);
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
    yield { ...decoded, at: n };
  }
  if (n === 0) throw invalidArgument('stream', 'is empty: it has no header');
  if (end === null) throw invalidArgument('stream', 'ends without its last line: it was cut short');
  for (const kind of KINDS) {
    const said = end[kind] === undefined && version === 1 && SINCE_VERSION_2.includes(kind) ? 0 : end[kind];
    if (said !== counted[kind]) {
      throw invalidArgument('stream', `holds ${counted[kind]} ${kind} lines, its last line says ${String(said)}`);
    }
  }
}

/** What the check of a stream keeps of each job: its keys, when it has any. */
type JobKeys = Pick<JobRecord, 'tenant' | 'orderKey' | 'supersedeKey' | 'state'> | null;

/**
 * Read a whole stream and check it: every line decodes, no job comes twice, and every line and
 * holder names jobs of the stream before it, of its tenant and key (a holder's live), each job in
 * one line at most and each key once. Throws `invalid_argument` naming the line.
 */
async function check(lines: AsyncIterable<string>): Promise<void> {
  const jobs = new Map<string, JobKeys>();
  const slots = new Set<string>();
  const inLine = new Set<string>();
  for await (const decoded of records(lines)) {
    const refuse = (what: string): TelhaError => invalidArgument('stream', `line ${decoded.at} ${what}`);
    if (decoded.type === 'job') {
      const { jobId, tenant, orderKey, supersedeKey, state } = decoded.record;
      if (jobs.has(jobId)) throw invalidArgument('stream', `holds job ${jobId} twice`);
      jobs.set(jobId, orderKey === null && supersedeKey === null ? null : { tenant, orderKey, supersedeKey, state });
    } else if (decoded.type === 'line') {
      const { tenant, key, ids } = decoded.record;
      const slot = `line:${orderSlot(tenant, key)}`;
      if (slots.has(slot)) throw refuse(`repeats the line of order key ${key}`);
      slots.add(slot);
      for (const id of ids) {
        const job = jobs.get(id);
        if (job?.orderKey !== key || job.tenant !== tenant) throw refuse(`names job ${id}, no job of order key ${key}`);
        if (inLine.has(id)) throw refuse(`names job ${id}, which a line before it holds`);
        inLine.add(id);
      }
    } else if (decoded.type === 'holder') {
      const { tenant, key, jobId } = decoded.record;
      const slot = `holder:${supersedeSlot(tenant, key)}`;
      if (slots.has(slot)) throw refuse(`repeats the holder of supersede key ${key}`);
      slots.add(slot);
      const job = jobs.get(jobId);
      if (job?.supersedeKey !== key || job.tenant !== tenant || !holdsKeyIn(job.state)) {
        throw refuse(`names job ${jobId}, no live job of supersede key ${key}`);
      }
    }
  }
}

/**
 * Write a stream `exportStore` made into `store`. `open` gives the stream's lines from the
 * start, each time it is called: the first read checks every line, the second writes. The
 * target must hold no jobs unless `merge`; then what it holds already (a job id or
 * idempotency key, a schedule's name in its scope, a pause, a limit's prefix or tenant, a job's
 * place in a line, a supersede key's holder) is kept and the stream's record skipped.
 */
export async function importStore(
  store: JobStore,
  open: () => AsyncIterable<string>,
  options: { readonly merge: boolean },
  clock: Clock,
): Promise<ImportSummary> {
  await check(open());
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
  const tenants = new Set((await store.listTenantLimits(clock.now())).map((l) => l.tenant));
  let jobs: JobRecord[] = [];
  const keys = { lines: [] as StoredLine[], holders: [] as StoredHolder[] };
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
      case 'tenant':
        if (tenants.has(decoded.record.tenant)) {
          skipped.tenant++;
        } else {
          await store.setTenantLimit(decoded.record, UNBOUNDED);
          written.tenant++;
        }
        break;
      case 'line':
        keys.lines.push(decoded.record);
        break;
      case 'holder':
        keys.holders.push(decoded.record);
        break;
    }
  }
  await flush();
  // The jobs are all written: place them in their lines, give the holders their keys.
  for (let i = 0; i < Math.max(keys.lines.length, keys.holders.length); i += PAGE) {
    const outcome = await store.importKeys({
      lines: keys.lines.slice(i, i + PAGE),
      holders: keys.holders.slice(i, i + PAGE),
    });
    written.line += outcome.lines.written;
    skipped.line += outcome.lines.skipped;
    written.holder += outcome.holders.written;
    skipped.holder += outcome.holders.skipped;
  }
  return { written, skipped };
}
