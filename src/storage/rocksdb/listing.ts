/**
 * A listing in `created_at` order (`core/list-order.ts`) over the jobs column, whose keys sort
 * by (scope, state, priority, created_at, id). Every (scope, state, priority) range is itself in
 * `created_at` order, so the listing merges those ranges, each read forwards or backwards from
 * the page's resume position: the store keeps no second index, and a page reads at most `limit`
 * rows past the resume point from each range (fewer, in `pageSize` batches), plus one seek per
 * range to find it. The ranges are found by seeking from one to the next, never by reading the
 * rows between them; their number is what a page's cost grows with (scopes that hold jobs of the
 * state, times the priorities used), not the number of jobs.
 */
import { compareListed, type ListPosition } from '../../core/list-order.ts';
import { kindMatches } from '../../core/transitions.ts';
import { ALL_JOB_STATES, type JobRecord, type JobState } from '../../core/types.ts';
import {
  decodeJobKey,
  encodeJobKey,
  jobIdToBytes,
  pageTokenAfter,
  pageTokenPosition,
  prefixUpperBound,
  SCOPE_BYTES,
  scopeBytes,
  stateRangePrefix,
  SYSTEM_SCOPE_BYTES,
} from '../../codec/keys.ts';
import type { ListPage, ListQuery } from '../types.ts';
import type { ColumnHandle, RocksDatabase } from './database.ts';

/** Rows fetched from a range at a time: a page usually takes its rows from a few ranges. */
const RANGE_BATCH = 16;

const PRIORITY_OFFSET = SCOPE_BYTES + 1;
const MAX_PRIORITY = 0xff;

interface RangeCursor {
  readonly rows: AsyncGenerator<[Buffer, Buffer]>;
  /** The range's next row, with the position it sorts by; `null` once the range is spent. */
  head: { key: Buffer; value: Buffer; position: ListPosition } | null;
}

/** One page of `query` from the jobs column; `decode` turns a row into a record, or `null` to skip a corrupt one. */
export async function listInOrder(
  db: RocksDatabase,
  jobs: ColumnHandle,
  query: ListQuery,
  decode: (key: Buffer, value: Buffer) => JobRecord | null,
): Promise<ListPage> {
  const after = query.pageToken === null ? null : pageTokenPosition(query.pageToken);
  const cursors: RangeCursor[] = [];
  try {
    for (const scope of await scopesOf(db, jobs, query)) {
      for (const prefix of await priorityRanges(db, jobs, scope, query.state)) {
        const cursor: RangeCursor = { rows: db.scan(jobs, rangeAfter(prefix, after, query), RANGE_BATCH), head: null };
        cursors.push(cursor);
        await advance(cursor);
      }
    }
    const page: JobRecord[] = [];
    let more = false;
    for (;;) {
      let next: RangeCursor | null = null;
      for (const cursor of cursors) {
        if (cursor.head === null) continue;
        if (
          next === null ||
          compareListed(cursor.head.position, (next.head as NonNullable<RangeCursor['head']>).position, query.order) < 0
        ) {
          next = cursor;
        }
      }
      if (next === null || next.head === null) break;
      const { key, value } = next.head;
      await advance(next);
      const record = decode(key, value);
      if (record === null) continue;
      if (query.kindPrefix !== null && !kindMatches(record.kind, [query.kindPrefix])) continue;
      if (page.length === query.limit) {
        more = true;
        break;
      }
      page.push(record);
    }
    const last = page[page.length - 1];
    return { jobs: page, nextPageToken: more && last !== undefined ? pageTokenAfter(last) : null };
  } finally {
    await Promise.all(cursors.map((cursor) => cursor.rows.return(undefined)));
  }
}

async function advance(cursor: RangeCursor): Promise<void> {
  const next = await cursor.rows.next();
  if (next.done === true) {
    cursor.head = null;
    return;
  }
  const [key, value] = next.value;
  const { createdAt, jobId } = decodeJobKey(key);
  cursor.head = { key, value, position: { createdAt, jobId } };
}

/** The scopes a listing reads: the one asked for, or each scope holding a job, found by seeking past the one before. */
async function scopesOf(db: RocksDatabase, jobs: ColumnHandle, query: ListQuery): Promise<Buffer[]> {
  if (query.scope.type !== 'any') return [scopeBytes(query.scope)];
  const scopes: Buffer[] = [];
  // The system scope is all zeros, so it sorts first; skipping it is starting after it.
  let from: Buffer | null = query.includeSystem ? SYSTEM_SCOPE_BYTES : prefixUpperBound(SYSTEM_SCOPE_BYTES);
  while (from !== null) {
    const first = await db.firstKey(jobs, from);
    if (first === null) break;
    const scope = Buffer.from(first.subarray(0, SCOPE_BYTES));
    scopes.push(scope);
    from = prefixUpperBound(scope);
  }
  return scopes;
}

/** The `[scope][state][priority]` prefixes that hold rows, in one state or all of them. */
async function priorityRanges(
  db: RocksDatabase,
  jobs: ColumnHandle,
  scope: Buffer,
  state: JobState | null,
): Promise<Buffer[]> {
  const states = state === null ? ALL_JOB_STATES : [state];
  const prefixes: Buffer[] = [];
  for (const s of states) {
    const stateStart = stateRangePrefix(scope, s);
    const stateEnd = prefixUpperBound(stateStart) ?? undefined;
    let from: Buffer | null = stateStart;
    while (from !== null) {
      const first = await db.firstKey(jobs, from, stateEnd);
      if (first === null) break;
      const prefix = Buffer.from(first.subarray(0, PRIORITY_OFFSET + 1));
      prefixes.push(prefix);
      from = (prefix[PRIORITY_OFFSET] as number) === MAX_PRIORITY ? null : prefixUpperBound(prefix);
    }
  }
  return prefixes;
}

/** The rows of one `[scope][state][priority]` range that come after `after`, in the listing's direction. */
function rangeAfter(
  prefix: Buffer,
  after: ListPosition | null,
  query: ListQuery,
): { gte?: Buffer; gt?: Buffer; lt?: Buffer; reverse?: boolean } {
  const end = prefixUpperBound(prefix) ?? undefined;
  const resume =
    after === null
      ? null
      : encodeJobKey({
          scope: prefix.subarray(0, SCOPE_BYTES),
          state: prefix[SCOPE_BYTES] as JobState,
          priority: prefix[PRIORITY_OFFSET] as number,
          createdAt: after.createdAt,
          jobId: jobIdToBytes(after.jobId),
        });
  if (query.order === 'newest_first') {
    return { gte: prefix, reverse: true, ...(resume !== null ? { lt: resume } : end !== undefined ? { lt: end } : {}) };
  }
  return { ...(resume !== null ? { gt: resume } : { gte: prefix }), ...(end !== undefined ? { lt: end } : {}) };
}
