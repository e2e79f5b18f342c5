/**
 * Loading a Telha store with completed jobs for workload 4, fast enough for
 * a million rows:
 *
 *  - RocksDB: the public API (`passThrough`: enqueueBatch, leaseBatch,
 *    complete) into a template store built once per run, then copied (closed
 *    store files) into each RocksDB system's directory;
 *  - PostgreSQL: the backend's own path costs round trips per completion
 *    (~1,100 completed jobs/s at git 8ca9a7c, 15 minutes for 1M), so rows
 *    are built with Telha's own transition functions and codec and inserted
 *    10,000 per statement, the way postgres-store's `columns()` lays them out.
 */
import { cp, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { scopeOfTenant } from '../../src/codec/keys.ts';
import { encodeRecord } from '../../src/codec/value.ts';
import { DEFAULT_CONFIG, makeConfig } from '../../src/core/config.ts';
import * as transitions from '../../src/core/transitions.ts';
import { finishedAt, JobState, type JobRecord } from '../../src/core/types.ts';
import { draftJob } from '../../src/core/drafts.ts';
import { newJobId } from '../../src/codec/job-ids.ts';
import { openQueue } from '../../src/open.ts';
import type { Queue } from '../../src/engine/queue.ts';
import { RETAINED_KIND, SCOPE } from './telha-common.ts';

/** Jobs per enqueueBatch / leaseBatch on the public API (the engine's limits are 10,000 / 1,000). */
const FILL_ENQUEUE = 10_000;
const FILL_LEASE = 1_000;
/** Rows per INSERT ... SELECT unnest on PostgreSQL. */
const PG_ROWS = 10_000;
const FILLER = 'bench-filler';

/**
 * Push `n` jobs through Pending → Leased → Completed on `queue`, 10,000 at a
 * time: one batch enqueue, ten 1,000-job lease batches, every completion at
 * once (the group committer coalesces them). The fastest path the public API offers.
 */
export async function passThrough(queue: Queue, n: number, progress: (done: number) => void): Promise<void> {
  for (let done = 0; done < n;) {
    const size = Math.min(FILL_ENQUEUE, n - done);
    await queue.enqueueBatch(
      Array.from({ length: size }, () => ({ kind: RETAINED_KIND })),
      SCOPE,
    );
    const leased: JobRecord[] = [];
    while (leased.length < size) {
      const batch = await queue.lease({
        workerId: FILLER,
        kinds: [RETAINED_KIND],
        scope: SCOPE,
        limit: Math.min(FILL_LEASE, size - leased.length),
      });
      if (batch.length === 0) throw new Error(`passThrough: only ${leased.length} of ${size} jobs could be leased`);
      leased.push(...batch);
    }
    await Promise.all(
      leased.map((job) => queue.complete(job.jobId, { workerId: FILLER, leaseGeneration: job.leaseGeneration })),
    );
    done += size;
    progress(done);
  }
}

const templates = new Map<string, Promise<string>>();

/** A closed RocksDB store holding `n` completed jobs, built once per run under `root`. */
function rocksTemplate(root: string, n: number, progress: (done: number) => void): Promise<string> {
  const key = `${root}:${n}`;
  let template = templates.get(key);
  if (template === undefined) {
    template = (async () => {
      const dir = join(root, `telha-retained-template-${n}`);
      await mkdir(dir, { recursive: true });
      const queue = await openQueue({ config: makeConfig({ storage: { path: dir } }), services: false });
      try {
        await passThrough(queue, n, progress);
      } finally {
        await queue.close();
      }
      return dir;
    })();
    templates.set(key, template);
  }
  return template;
}

/** Replace the (closed) store in `dir` with a copy of the template holding `n` completed jobs. */
export async function loadRocksRetained(
  root: string,
  dir: string,
  n: number,
  progress: (done: number) => void,
): Promise<void> {
  const template = await rocksTemplate(root, n, progress);
  await rm(dir, { recursive: true, force: true });
  await cp(template, dir, { recursive: true });
}

/** One completed job as the engine would have written it: enqueued, leased and completed at `now`. */
function completedRecord(createdAt: number, now: number): JobRecord {
  const policy = { config: DEFAULT_CONFIG.jobs, backoffByKind: new Map() };
  const draft = draftJob(
    SCOPE,
    { kind: RETAINED_KIND },
    { now, fieldPrefix: '', maxPayloadBytes: DEFAULT_CONFIG.jobs.max_payload_bytes, jobId: newJobId() },
  );
  const leased = transitions.lease(transitions.enqueue({ ...draft, createdAt }, now), FILLER, now, policy);
  return transitions.complete(leased, { workerId: FILLER, leaseGeneration: leased.leaseGeneration }, now);
}

/**
 * Insert `n` completed jobs into a migrated Telha schema, column for column as
 * postgres-store's `columns()` writes them, and move the schema's
 * `created_at` high-water mark past them so later enqueues sort after.
 */
export async function loadPostgresRetained(
  url: string,
  schema: string,
  n: number,
  progress: (done: number) => void,
): Promise<void> {
  const table = pg.escapeIdentifier(schema);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const now = Date.now() * 1000;
    // Created one microsecond apart, ending now: older than anything enqueued afterwards.
    const firstCreated = now - n;
    for (let done = 0; done < n;) {
      const size = Math.min(PG_ROWS, n - done);
      const columns: unknown[][] = Array.from({ length: 13 }, () => []);
      for (let i = 0; i < size; i++) {
        const r = completedRecord(firstCreated + done + i, now);
        if (r.state !== JobState.Completed) throw new Error('filler record is not completed');
        const row = [
          r.jobId,
          scopeOfTenant(r.tenant),
          r.tenant,
          r.state,
          r.priority,
          r.createdAt,
          r.kind,
          null, // not_before: only a closed gate of a Pending job is kept
          r.leaseDeadline,
          r.workerId,
          r.idempotencyKey,
          finishedAt(r),
          encodeRecord(r),
        ];
        row.forEach((value, c) => columns[c]!.push(value));
      }
      await client.query(
        `INSERT INTO ${table}.jobs (job_id, scope, tenant, state, priority, created_at, kind, not_before,
           lease_deadline, worker_id, idempotency_key, finished_at, record)
         SELECT * FROM unnest($1::uuid[], $2::bytea[], $3::text[], $4::smallint[], $5::smallint[], $6::bigint[],
           $7::text[], $8::bigint[], $9::bigint[], $10::text[], $11::text[], $12::bigint[], $13::bytea[])`,
        columns,
      );
      done += size;
      progress(done);
    }
    await client.query(`UPDATE ${table}.meta SET last_created_at = GREATEST(last_created_at, $1::bigint)`, [now]);
    await client.query(`ANALYZE ${table}.jobs`);
  } finally {
    await client.end();
  }
}
