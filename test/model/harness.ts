/**
 * Runs one command list against a real queue and the reference model in
 * lockstep: every operation's outcome is compared, then the whole store
 * (each job by id, counts, leased set, key order per state, next gate) and
 * the engine-only invariants (one live lease per job, generations never go
 * down, Completed is final).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/core/clock.ts';
import { makeConfig, type TelhaConfig } from '../../src/core/config.ts';
import { LeaseConflictError, TelhaError } from '../../src/core/errors.ts';
import {
  ANY_SCOPE,
  JOB_STATE_NAMES,
  JobState,
  SYSTEM_SCOPE,
  tenantScope,
  type JobRecord,
  type ListPage,
  type LeaseFence,
  type QueueScope,
  type ScopeFilter,
} from '../../src/core/types.ts';
import { openStore } from '../../src/open.ts';
import type { JobStore } from '../../src/storage/types.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { Queue } from '../../src/engine/queue.ts';
import type { NewJob as EngineNewJob } from '../../src/core/types.ts';
import {
  CANCEL_PREFIXES,
  LIMIT_PREFIXES,
  LIMIT_RATES,
  PAUSE_PREFIXES,
  EVERY_KIND_BY_NAME,
  KIND_FILTERS,
  SYSTEM_KINDS,
  TENANT_A,
  TENANT_B,
  TENANT_KINDS,
  WORKERS,
  type Command,
  type EnqueueScope,
  type FenceVariant,
  type JobSpec,
  type LeaseRef,
  type LeaseScope,
  type OpScope,
} from './commands.ts';
import {
  MODEL_CONFIG,
  ReferenceModel,
  type Expected,
  type Fence,
  type ModelJob,
  type ModelLease,
  type ModelRate,
  type ModelScope,
  type ModelScopeFilter,
  type NewJob,
} from './reference.ts';

const SECOND = 1_000_000;
/** 2026-01-01T00:00:00Z in µs. */
const START = Date.UTC(2026, 0, 1) * 1000;
/** A well-formed v7 id the store never issued (its timestamp is the epoch). */
const GHOST_ID = '00000000-0000-7000-8000-000000000000';

const JOBS_CONFIG = { ...MODEL_CONFIG, reaper_interval_secs: 30 };

// ---- backends ----

/** A queue and the store under it (the model also checks a seam method, `nextGateAt`). */
export interface Opened {
  readonly queue: Queue;
  readonly store: JobStore;
}

export interface Backend {
  readonly name: string;
  open(clock: ManualClock): Promise<Opened>;
  /** Close and open the same store again; `undefined` when the backend keeps nothing. */
  readonly reopen: ((opened: Opened, clock: ManualClock) => Promise<Opened>) | undefined;
  /** Whether rate limits' token buckets survive a reopen (a shared store keeps them in the database). */
  readonly durableBuckets?: boolean;
  dispose(): Promise<void>;
}

async function openOn(config: TelhaConfig, clock: ManualClock, inMemory = false): Promise<Opened> {
  const store = await openStore(config, { inMemory, clock });
  return { queue: new Queue({ store, config, clock, services: false }), store };
}

export function memoryBackend(): Backend {
  const config: TelhaConfig = makeConfig({ jobs: JOBS_CONFIG, retention: { enabled: false } });
  return {
    name: 'memory',
    open: (clock) => openOn(config, clock, true),
    reopen: undefined,
    dispose: () => Promise.resolve(),
  };
}

export async function rocksBackend(): Promise<Backend> {
  const dir = await mkdtemp(join(tmpdir(), 'telha-model-'));
  const config: TelhaConfig = makeConfig({ storage: { path: dir }, jobs: JOBS_CONFIG, retention: { enabled: false } });
  return {
    name: 'rocksdb',
    open: (clock) => openOn(config, clock),
    reopen: async (opened, clock) => {
      await opened.queue.close();
      return openOn(config, clock);
    },
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A fresh schema in the test PostgreSQL per run, dropped afterwards. */
export function postgresBackend(): Backend {
  const schema = uniqueSchema('model');
  const config: TelhaConfig = makeConfig({
    storage: { kind: 'postgres', url: TEST_PG_URL, schema },
    jobs: JOBS_CONFIG,
    retention: { enabled: false },
  });
  return {
    name: 'postgres',
    durableBuckets: true,
    open: (clock) => openOn(config, clock),
    reopen: async (opened, clock) => {
      await opened.queue.close();
      return openOn(config, clock);
    },
    dispose: () => dropTestSchema(schema),
  };
}

// ---- outcomes ----

type Observed<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly code: string; readonly reason?: string };

async function attempt<T>(op: () => Promise<T>): Promise<Observed<T>> {
  try {
    return { ok: true, value: await op() };
  } catch (error) {
    if (error instanceof LeaseConflictError) return { ok: false, code: error.code, reason: error.reason };
    if (error instanceof TelhaError) return { ok: false, code: error.code };
    throw error;
  }
}

function mapOk<T, U>(outcome: Observed<T> | Expected<T>, f: (value: T) => U): Observed<U> {
  return outcome.ok ? { ok: true, value: f(outcome.value) } : outcome;
}

/** What is compared of a record an operation returns. */
interface Summary {
  readonly id: string;
  readonly state: string;
  readonly attempts: number;
  readonly generation: number;
  readonly workerId: string | null;
  readonly leaseDeadline: number | null;
  readonly attemptDeadline: number | null;
  readonly timeoutSecs: number | null;
  readonly notBefore: number | null;
}

function summarize(record: JobRecord): Summary {
  return {
    id: record.jobId,
    state: JOB_STATE_NAMES[record.state],
    attempts: record.attempts,
    generation: record.leaseGeneration,
    workerId: record.workerId,
    leaseDeadline: record.leaseDeadline,
    attemptDeadline: record.attemptDeadline,
    timeoutSecs: record.timeoutSecs,
    notBefore: record.notBefore,
  };
}

function summarizeModel(job: ModelJob): Summary {
  return {
    id: job.id,
    state: JOB_STATE_NAMES[job.state],
    attempts: job.attempts,
    generation: job.generation,
    workerId: job.workerId,
    leaseDeadline: job.leaseDeadline,
    attemptDeadline: job.attemptDeadline,
    timeoutSecs: job.timeoutSecs,
    notBefore: job.notBefore,
  };
}

/** The full per-job view compared after every step. */
function projectRecord(record: JobRecord): Record<string, unknown> {
  return {
    tenant: record.tenant,
    kind: record.kind,
    priority: record.priority,
    state: JOB_STATE_NAMES[record.state],
    attempts: record.attempts,
    leaseGeneration: record.leaseGeneration,
    workerId: record.workerId,
    leaseDeadline: record.leaseDeadline,
    attemptDeadline: record.attemptDeadline,
    timeoutSecs: record.timeoutSecs,
    notBefore: record.notBefore,
    maxAttempts: record.maxAttempts,
    idempotencyKey: record.idempotencyKey,
    continuation: record.continuation === null ? null : [...record.continuation],
    lastEvent: record.events[record.events.length - 1]?.transition ?? null,
    supersedeKey: record.supersedeKey,
    supersededBy: record.supersededBy,
    debounceUntil: record.debounceUntil,
    orderKey: record.orderKey,
    orderReleaseOnDead: record.orderReleaseOnDead,
  };
}

function projectModel(job: ModelJob): Record<string, unknown> {
  return {
    tenant: job.tenant,
    kind: job.kind,
    priority: job.priority,
    state: JOB_STATE_NAMES[job.state],
    attempts: job.attempts,
    leaseGeneration: job.generation,
    workerId: job.workerId,
    leaseDeadline: job.leaseDeadline,
    attemptDeadline: job.attemptDeadline,
    timeoutSecs: job.timeoutSecs,
    notBefore: job.notBefore,
    maxAttempts: job.maxAttempts,
    idempotencyKey: job.idempotencyKey,
    continuation: job.continuation === null ? null : [...job.continuation],
    lastEvent: job.lastEvent,
    supersedeKey: job.supersedeKey,
    supersededBy: job.supersededBy,
    debounceUntil: job.debounceUntil,
    orderKey: job.orderKey,
    orderReleaseOnDead: job.orderReleaseOnDead,
  };
}

// ---- translating commands ----

function scopeName(scope: EnqueueScope): ModelScope {
  return scope === 'a' ? TENANT_A : scope === 'b' ? TENANT_B : null;
}

function queueScope(scope: ModelScope): QueueScope {
  return scope === null ? SYSTEM_SCOPE : tenantScope(scope);
}

function leaseFilter(scope: LeaseScope): { engine: ScopeFilter; model: ModelScopeFilter } {
  if (scope === 'any') return { engine: ANY_SCOPE, model: { any: true } };
  const name = scopeName(scope);
  return { engine: queueScope(name), model: { any: false, scope: name } };
}

/** The scope argument of an operation on `job`: `undefined` means the argument is omitted. */
function opFilter(scope: OpScope, job: ModelScope): { engine: ScopeFilter | undefined; model: ModelScopeFilter } {
  switch (scope) {
    case 'default':
      return { engine: undefined, model: { any: true } };
    case 'any':
      return { engine: ANY_SCOPE, model: { any: true } };
    case 'own':
      return { engine: queueScope(job), model: { any: false, scope: job } };
    case 'other': {
      const other = job === null ? TENANT_A : job === TENANT_A ? TENANT_B : null;
      return { engine: queueScope(other), model: { any: false, scope: other } };
    }
  }
}

function fenceOf(lease: ModelLease, variant: FenceVariant): Fence {
  switch (variant) {
    case 'exact':
      return { workerId: lease.workerId, generation: lease.generation };
    case 'wrongWorker':
      return { workerId: otherWorker(lease.workerId), generation: lease.generation };
    case 'oldGen':
      return { workerId: lease.workerId, generation: lease.generation - 1 };
    case 'nextGen':
      return { workerId: lease.workerId, generation: lease.generation + 1 };
    case 'wrongWorkerOldGen':
      return { workerId: otherWorker(lease.workerId), generation: lease.generation - 1 };
  }
}

function otherWorker(workerId: string): string {
  const i = WORKERS.indexOf(workerId as (typeof WORKERS)[number]);
  return WORKERS[(i + 1) % WORKERS.length]!;
}

function engineFence(fence: Fence): LeaseFence {
  return { workerId: fence.workerId, leaseGeneration: fence.generation };
}

/** A job request in `scope`: the options the engine gets and what the model makes of them. */
function request(spec: JobSpec, scope: ModelScope, now: number): { options: EngineNewJob; model: NewJob } {
  const systemFamily = (scope === null) !== spec.wrongKindFamily;
  const family: readonly string[] = systemFamily ? SYSTEM_KINDS : TENANT_KINDS;
  const kind = family[spec.kind % family.length]!;
  const notBefore =
    spec.debounceMs !== undefined
      ? now + spec.debounceMs * 1000
      : spec.notBeforeOffsetSecs !== undefined
        ? now + spec.notBeforeOffsetSecs * SECOND
        : spec.delayMs !== undefined && spec.delayMs > 0
          ? now + spec.delayMs * 1000
          : null;
  const options: EngineNewJob = {
    kind,
    ...(spec.priority === undefined ? {} : { priority: spec.priority }),
    ...(spec.delayMs === undefined ? {} : { delayMs: spec.delayMs }),
    ...(spec.notBeforeOffsetSecs === undefined ? {} : { notBefore: now + spec.notBeforeOffsetSecs * SECOND }),
    ...(spec.maxAttempts === undefined ? {} : { maxAttempts: spec.maxAttempts }),
    ...(spec.idempotencyKey === undefined ? {} : { idempotencyKey: spec.idempotencyKey }),
    ...(spec.timeoutSecs === undefined ? {} : { timeoutSecs: spec.timeoutSecs }),
    ...(spec.supersedeKey === undefined ? {} : { supersedeKey: spec.supersedeKey }),
    ...(spec.orderKey === undefined ? {} : { orderKey: spec.orderKey }),
    ...(spec.supersede === undefined ? {} : { supersede: spec.supersede }),
    ...(spec.debounceMs === undefined ? {} : { debounceMs: spec.debounceMs }),
    ...(spec.debounceMaxMs === undefined ? {} : { debounceMaxMs: spec.debounceMaxMs }),
    ...(spec.orderOnDead === undefined ? {} : { orderOnDead: spec.orderOnDead }),
  };
  return {
    options,
    model: {
      kind,
      valid: !spec.wrongKindFamily,
      priority: spec.priority ?? 128,
      notBefore,
      maxAttempts: spec.maxAttempts ?? null,
      idempotencyKey: spec.idempotencyKey ?? null,
      timeoutSecs: spec.timeoutSecs ?? null,
      supersedeKey: spec.supersedeKey ?? null,
      supersede: spec.supersede ?? 'pending',
      debounceUntil: spec.debounceMaxMs === undefined ? null : now + spec.debounceMaxMs * 1000,
      orderKey: spec.orderKey ?? null,
      orderReleaseOnDead: spec.orderOnDead === 'release',
    },
  };
}

/** Pick a granted lease: a live one when asked and there is one, else any; index 0 is the newest. */
function pickLease(model: ReferenceModel, ref: LeaseRef): ModelLease | undefined {
  const live = ref.live
    ? model.leases.filter(
        (l) => l.job.state === JobState.Leased && l.job.workerId === l.workerId && l.job.generation === l.generation,
      )
    : [];
  const pool = live.length > 0 ? live : model.leases;
  const n = pool.length;
  return n === 0 ? undefined : pool[n - 1 - (ref.index % n)];
}

// ---- the run ----

/** The model's reading of a rate the test sets: its numbers, or `invalid` for one the queue refuses. */
function modelRate(rate: string | null): ModelRate | 'invalid' | null {
  switch (rate) {
    case null:
      return null;
    case '1/10s':
      return { count: 1, periodMs: 10_000 };
    case '2/30s':
      return { count: 2, periodMs: 30_000 };
    case '3/1m':
      return { count: 3, periodMs: 60_000 };
    default:
      return 'invalid';
  }
}

function describeCommand(step: number, command: Command): string {
  return `step ${step}: ${JSON.stringify(command)}`;
}

/** Tally of outcomes per command (`extend:lease_conflict/generation_superseded`, `lease:2`, ...), for coverage reports. */
export type Coverage = Map<string, number>;

function tally(coverage: Coverage | undefined, command: Command, outcome: Observed<unknown>): void {
  if (coverage === undefined) return;
  let label: string;
  if (!outcome.ok) label = `${outcome.code}${outcome.reason === undefined ? '' : `/${outcome.reason}`}`;
  else if (command.t === 'enqueue') {
    const results = outcome.value as { created: boolean }[];
    const created = results.filter((r) => r.created).length;
    label = `ok, ${created} created, ${results.length - created} existing`;
  } else if (Array.isArray(outcome.value)) label = `ok, ${outcome.value.length} job(s)`;
  else if (typeof outcome.value === 'number') label = `ok, ${outcome.value > 0 ? 'some' : 'none'} cancelled`;
  else if (command.t === 'reap') {
    const { reaped, dead } = outcome.value as { reaped: number; dead: number };
    label = `ok, reaped ${reaped} dead ${dead}`;
  } else if (typeof outcome.value === 'object' && outcome.value !== null && 'state' in outcome.value) {
    const record = outcome.value as JobRecord;
    label = `ok -> ${JOB_STATE_NAMES[record.state]} (attempts ${record.attempts})`;
  } else if (typeof outcome.value === 'object' && outcome.value !== null && 'successors' in outcome.value) {
    const successors = (outcome.value as { successors: { created: boolean }[] }).successors;
    const created = successors.filter((r) => r.created).length;
    label = `ok, successors ${created} created, ${successors.length - created} existing`;
  } else label = 'ok';
  const key = `${command.t}: ${label}`;
  coverage.set(key, (coverage.get(key) ?? 0) + 1);
}

function same(actual: unknown, expected: unknown, context: string): void {
  try {
    assert.deepStrictEqual(actual, expected);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new assert.AssertionError({
      message: `${context}\n  actual:   ${JSON.stringify(actual)}\n  expected: ${JSON.stringify(expected)}\n${detail}`,
    });
  }
}

export async function runCommands(commands: readonly Command[], backend: Backend, coverage?: Coverage): Promise<void> {
  const clock = new ManualClock(START);
  const model = new ReferenceModel();
  let opened = await backend.open(clock);
  let queue = opened.queue;
  /** Engine-side history, independent of the model. */
  const seenGeneration = new Map<string, number>();
  const grantedGeneration = new Map<string, number>();
  const seenCompleted = new Set<string>();
  const execute = async (command: Command, context: string): Promise<void> => {
    const now = clock.now();
    switch (command.t) {
      case 'enqueue': {
        const scope = scopeName(command.scope);
        const requests = command.jobs.map((spec) => request(spec, scope, now));
        const observed = await attempt(() =>
          queue.enqueueBatch(
            requests.map((r) => r.options),
            queueScope(scope),
          ),
        );
        const fresh = (i: number): string =>
          (observed.ok ? observed.value[i]?.job.jobId : undefined) ?? `<no job ${i}>`;
        const replacedBefore = model.jobs.filter((j) => j.supersededBy !== null).length;
        const expected = model.enqueue(
          scope,
          requests.map((r) => r.model),
          fresh,
        );
        tally(coverage, command, observed);
        const replaced = model.jobs.filter((j) => j.supersededBy !== null).length - replacedBefore;
        if (coverage !== undefined && replaced > 0) {
          coverage.set('enqueue: superseded a holder', (coverage.get('enqueue: superseded a holder') ?? 0) + 1);
        }
        const continued = expected.ok
          ? expected.value.filter((o, i) => o.created && o.job.debounceUntil !== requests[i]?.model.debounceUntil)
          : [];
        if (coverage !== undefined && continued.length > 0) {
          coverage.set(
            'enqueue: continued a debounce run',
            (coverage.get('enqueue: continued a debounce run') ?? 0) + 1,
          );
        }
        same(
          mapOk(observed, (rs) =>
            rs.map((r) => ({ id: r.job.jobId, created: r.created, state: JOB_STATE_NAMES[r.job.state] })),
          ),
          mapOk(expected, (rs) =>
            rs.map((r) => ({ id: r.job.id, created: r.created, state: JOB_STATE_NAMES[r.job.state] })),
          ),
          context,
        );
        break;
      }
      case 'lease': {
        const filter = leaseFilter(command.scope);
        const kinds = KIND_FILTERS[command.kinds % KIND_FILTERS.length];
        const workerId = WORKERS[command.worker % WORKERS.length]!;
        const options = { workerId, ...(kinds === undefined ? {} : { kinds }) };
        const limit = command.limit;
        const observed = await attempt(async () =>
          limit === null
            ? [await queue.leaseNext({ ...options, scope: filter.engine })].filter((r): r is JobRecord => r !== null)
            : queue.lease({ ...options, scope: filter.engine, limit }),
        );
        const leased = model.lease(filter.model, kinds, workerId, limit ?? 1, now);
        tally(coverage, command, observed);
        same(
          mapOk(observed, (rs) => rs.map(summarize)),
          { ok: true, value: leased.map(summarizeModel) },
          context,
        );
        if (observed.ok) {
          for (const record of observed.value) {
            const before = grantedGeneration.get(record.jobId) ?? 0;
            assert.ok(
              record.leaseGeneration > before,
              `${context}: generation ${record.leaseGeneration} granted twice for ${record.jobId}`,
            );
            grantedGeneration.set(record.jobId, record.leaseGeneration);
          }
        }
        break;
      }
      case 'extend':
      case 'checkpoint':
      case 'fail':
      case 'release': {
        const lease = pickLease(model, command.lease);
        if (lease === undefined) break;
        const fence = fenceOf(lease, command.fence);
        const id = lease.job.id;
        const filter = opFilter(command.scope, lease.job.tenant);
        let observed: Observed<JobRecord>;
        let expected: Expected<ModelJob>;
        if (command.t === 'extend') {
          observed = await attempt(() => queue.heartbeat(id, engineFence(fence), {}, filter.engine));
          expected = model.extend(id, fence, filter.model, now);
        } else if (command.t === 'checkpoint') {
          const bytes = command.bytes;
          observed = await attempt(() =>
            queue.checkpoint(id, engineFence(fence), Uint8Array.from(bytes), filter.engine),
          );
          expected = model.checkpoint(id, fence, filter.model, bytes, now);
        } else if (command.t === 'release') {
          observed = await attempt(() => queue.release(id, engineFence(fence), filter.engine));
          expected = model.release(id, fence, filter.model);
        } else {
          const retryable = command.retryable;
          observed = await attempt(() =>
            queue.fail(
              id,
              engineFence(fence),
              { error: 'boom', ...(retryable === undefined ? {} : { permanent: !retryable }) },
              filter.engine,
            ),
          );
          expected = model.fail(id, fence, filter.model, retryable ?? true, now);
        }
        tally(coverage, command, observed);
        same(mapOk(observed, summarize), mapOk(expected, summarizeModel), context);
        break;
      }
      case 'complete': {
        const lease = pickLease(model, command.lease);
        if (lease === undefined) break;
        const fence = fenceOf(lease, command.fence);
        const id = lease.job.id;
        const filter = opFilter(command.scope, lease.job.tenant);
        // Successor kinds follow the completed job's scope, which the model knows.
        const requests = command.successors.map((spec) => request(spec, lease.job.tenant, now));
        const observed = await attempt(() =>
          queue.complete(id, engineFence(fence), { successors: requests.map((r) => r.options) }, filter.engine),
        );
        const fresh = (i: number): string =>
          (observed.ok ? observed.value.successors[i]?.job.jobId : undefined) ?? `<no job ${i}>`;
        const expected = model.complete(id, fence, filter.model, () => requests.map((r) => r.model), fresh);
        tally(coverage, command, observed);
        same(
          mapOk(observed, (r) => ({
            job: summarize(r.job),
            successors: r.successors.map((s) => ({
              id: s.job.jobId,
              created: s.created,
              state: JOB_STATE_NAMES[s.job.state],
            })),
          })),
          mapOk(expected, (r) => ({
            job: summarizeModel(r.job),
            successors: r.successors.map((s) => ({
              id: s.job.id,
              created: s.created,
              state: JOB_STATE_NAMES[s.job.state],
            })),
          })),
          context,
        );
        break;
      }
      case 'reap': {
        const observed = await attempt(() => queue.maintenance.reapExpired());
        const expected = model.reap(now);
        tally(coverage, command, observed);
        same(observed, { ok: true, value: expected }, context);
        break;
      }
      case 'retry': {
        const dead = command.dead ? model.jobs.filter((j) => j.state === JobState.Dead) : [];
        const pool = dead.length > 0 ? dead : model.jobs;
        const n = pool.length;
        if (n === 0) break;
        const job = pool[n - 1 - (command.job % n)]!;
        const filter = opFilter(command.scope, job.tenant);
        const observed = await attempt(() => queue.retry(job.id, filter.engine));
        const expected = model.retry(job.id, filter.model);
        tally(coverage, command, observed);
        same(mapOk(observed, summarize), mapOk(expected, summarizeModel), context);
        break;
      }
      case 'cancel': {
        const live = command.live
          ? model.jobs.filter((j) => j.state === JobState.Pending || j.state === JobState.Leased)
          : [];
        const pool = live.length > 0 ? live : model.jobs;
        const n = pool.length;
        if (n === 0) break;
        const job = pool[n - 1 - (command.job % n)]!;
        const filter = opFilter(command.scope, job.tenant);
        const observed = await attempt(() => queue.cancel(job.id, { by: 'model' }, filter.engine));
        const expected = model.cancel(job.id, filter.model);
        tally(coverage, command, observed);
        same(mapOk(observed, summarize), mapOk(expected, summarizeModel), context);
        break;
      }
      case 'discard': {
        const dead = command.dead ? model.jobs.filter((j) => j.state === JobState.Dead) : [];
        const pool = dead.length > 0 ? dead : model.jobs;
        const n = pool.length;
        if (n === 0) break;
        const job = pool[n - 1 - (command.job % n)]!;
        const filter = opFilter(command.scope, job.tenant);
        const observed = await attempt(() => queue.discard(job.id, { by: 'model' }, filter.engine));
        const expected = model.discard(job.id, filter.model);
        tally(coverage, command, observed);
        same(mapOk(observed, summarize), mapOk(expected, summarizeModel), context);
        break;
      }
      case 'runNow': {
        const gated = command.gated
          ? model.jobs.filter((j) => j.state === JobState.Pending && j.notBefore !== null && j.notBefore > now)
          : [];
        const pool = gated.length > 0 ? gated : model.jobs;
        const n = pool.length;
        if (n === 0) break;
        const job = pool[n - 1 - (command.job % n)]!;
        const filter = opFilter(command.scope, job.tenant);
        const observed = await attempt(() => queue.runNow(job.id, { by: 'model' }, filter.engine));
        const expected = model.runNow(job.id, filter.model, now);
        tally(coverage, command, observed);
        same(mapOk(observed, summarize), mapOk(expected, summarizeModel), context);
        break;
      }
      case 'cancelMatching': {
        const filter = leaseFilter(command.scope);
        const prefix = CANCEL_PREFIXES[command.prefix % CANCEL_PREFIXES.length];
        const states =
          command.states === 'pending'
            ? [JobState.Pending]
            : command.states === 'leased'
              ? [JobState.Leased]
              : [JobState.Pending, JobState.Leased];
        const observed = await attempt(() =>
          queue.cancelMatching({
            scope: filter.engine,
            states,
            by: 'model',
            ...(prefix === undefined ? {} : { kindPrefix: prefix }),
          }),
        );
        // Every job of every scope at once is refused; the model decides nothing then.
        const expected =
          filter.model.any && prefix === undefined
            ? { ok: false as const, code: 'invalid_argument' }
            : { ok: true as const, value: model.cancelMatching(filter.model, states, prefix) };
        tally(coverage, command, observed);
        same(observed, expected, context);
        break;
      }
      case 'pause': {
        const prefix = PAUSE_PREFIXES[command.prefix % PAUSE_PREFIXES.length] as string;
        const scope = command.scope === 'everywhere' ? undefined : scopeName(command.scope);
        const engineScope = scope === undefined ? 'everywhere' : queueScope(scope);
        const observed = await attempt(async () => {
          if (command.resume) await queue.resume({ kindPrefix: prefix, scope: engineScope });
          else await queue.pause({ kindPrefix: prefix, scope: engineScope, by: 'model' });
          return undefined;
        });
        const expected = command.resume ? model.resume(scope, prefix) : model.pause(scope, prefix);
        tally(coverage, command, observed);
        same(observed, expected, context);
        break;
      }
      case 'setLimit': {
        const prefix = LIMIT_PREFIXES[command.prefix % LIMIT_PREFIXES.length] as string;
        const rate = LIMIT_RATES[command.rate % LIMIT_RATES.length] ?? null;
        const observed = await attempt(async () => {
          await queue.setKindLimit({ kindPrefix: prefix, concurrency: command.concurrency, rate, by: 'model' });
          return undefined;
        });
        const expected = model.setLimit(prefix, command.concurrency, modelRate(rate));
        tally(coverage, command, observed);
        same(observed, expected, context);
        break;
      }
      case 'clearLimit': {
        const prefix = LIMIT_PREFIXES[command.prefix % LIMIT_PREFIXES.length] as string;
        const observed = await attempt(async () => {
          await queue.clearKindLimit(prefix);
          return undefined;
        });
        tally(coverage, command, observed);
        same(observed, model.clearLimit(prefix), context);
        break;
      }
      case 'setTenantLimit': {
        const tenant = scopeName(command.tenant) as string;
        const rate = LIMIT_RATES[command.rate % LIMIT_RATES.length] ?? null;
        const observed = await attempt(async () => {
          await queue.setTenantLimit({
            tenant,
            concurrency: command.concurrency,
            rate,
            weight: command.weight,
            by: 'model',
          });
          return undefined;
        });
        const expected = model.setTenantLimit(tenant, command.concurrency, modelRate(rate), command.weight);
        tally(coverage, command, observed);
        same(observed, expected, context);
        break;
      }
      case 'clearTenantLimit': {
        const tenant = scopeName(command.tenant) as string;
        const observed = await attempt(async () => {
          await queue.clearTenantLimit(tenant);
          return undefined;
        });
        tally(coverage, command, observed);
        same(observed, model.clearTenantLimit(tenant), context);
        break;
      }
      case 'releaseKey': {
        const [blocked] = command.blocked ? model.blockedKeys() : [];
        const scope = blocked === undefined ? scopeName(command.scope) : blocked[0];
        const key = blocked === undefined ? command.key : blocked[1];
        const observed = await attempt(() => queue.releaseKey(queueScope(scope), key));
        tally(coverage, command, observed);
        same(
          mapOk(observed, (r) => (r === null ? null : summarize(r))),
          mapOk(model.releaseKey(scope, key), (j) => (j === null ? null : summarizeModel(j))),
          context,
        );
        break;
      }
      case 'advance':
        clock.advanceSeconds(command.secs);
        if (command.reap) await execute({ t: 'reap' }, `${context} (reap)`);
        break;
      case 'ghost': {
        const fence = { workerId: WORKERS[0], leaseGeneration: 1 };
        const observed = await attempt(async (): Promise<unknown> => {
          switch (command.op) {
            case 'extend':
              return queue.heartbeat(GHOST_ID, fence);
            case 'checkpoint':
              return queue.checkpoint(GHOST_ID, fence, new Uint8Array([1]));
            case 'complete':
              return queue.complete(GHOST_ID, fence);
            case 'fail':
              return queue.fail(GHOST_ID, fence, { error: 'boom' });
            case 'release':
              return queue.release(GHOST_ID, fence);
            case 'retry':
              return queue.retry(GHOST_ID);
            case 'cancel':
              return queue.cancel(GHOST_ID);
            case 'discard':
              return queue.discard(GHOST_ID);
            case 'runNow':
              return queue.runNow(GHOST_ID);
            case 'show':
              return queue.show(GHOST_ID);
          }
        });
        tally(coverage, command, observed);
        same(observed, { ok: false, code: 'not_found' }, context);
        break;
      }
      case 'work': {
        const before = model.leases.length;
        await execute(
          { t: 'lease', scope: 'any', kinds: EVERY_KIND_BY_NAME, worker: command.worker, limit: null },
          `${context} (lease)`,
        );
        if (model.leases.length === before || command.then === 'abandon') break;
        // The newest live lease is the one just granted.
        const lease = { live: true, index: 0 };
        const settle: Command =
          command.then === 'complete'
            ? { t: 'complete', lease, fence: 'exact', scope: 'default', successors: [] }
            : command.then === 'checkpoint'
              ? { t: 'checkpoint', lease, fence: 'exact', scope: 'default', bytes: [command.worker] }
              : command.then === 'release'
                ? { t: 'release', lease, fence: 'exact', scope: 'default' }
                : {
                    t: 'fail',
                    lease,
                    fence: 'exact',
                    scope: 'default',
                    retryable: command.then === 'fail' ? undefined : false,
                  };
        await execute(settle, `${context} (then ${command.then})`);
        break;
      }
      case 'restart':
        if (backend.reopen !== undefined) {
          opened = await backend.reopen(opened, clock);
          queue = opened.queue;
          model.restarted({ keepBuckets: backend.durableBuckets === true });
        }
        break;
    }
  };
  try {
    for (const [step, command] of commands.entries()) {
      const context = describeCommand(step, command);
      await execute(command, context);
      await checkStore(opened, model, clock.now(), context, { seenGeneration, seenCompleted });
    }
  } finally {
    await queue.close();
    await backend.dispose();
  }
}

const STATES_LISTED = [
  JobState.Pending,
  JobState.Leased,
  JobState.Completed,
  JobState.Dead,
  JobState.Cancelled,
] as const;

async function checkStore(
  { queue, store }: Opened,
  model: ReferenceModel,
  now: number,
  context: string,
  history: { seenGeneration: Map<string, number>; seenCompleted: Set<string> },
): Promise<void> {
  let previousCreatedAt = -Infinity;
  for (const job of model.jobs) {
    const record = await queue.show(job.id);
    same(projectRecord(record), projectModel(job), `${context}\n  job ${job.id} (#${job.seq})`);
    // created_at strictly increases in enqueue order.
    assert.ok(
      record.createdAt > previousCreatedAt,
      `${context}: created_at of job #${job.seq} does not follow the previous job's`,
    );
    previousCreatedAt = record.createdAt;
    // Invariants that need no model.
    const leased = record.state === JobState.Leased;
    assert.equal(leased, record.workerId !== null, `${context}: job ${job.id} workerId vs state`);
    assert.equal(leased, record.leaseDeadline !== null, `${context}: job ${job.id} leaseDeadline vs state`);
    if (!leased)
      assert.equal(record.continuation, null, `${context}: job ${job.id} keeps a continuation outside a lease`);
    const before = history.seenGeneration.get(job.id) ?? 0;
    assert.ok(
      record.leaseGeneration >= before,
      `${context}: job ${job.id} generation went from ${before} to ${record.leaseGeneration}`,
    );
    history.seenGeneration.set(job.id, record.leaseGeneration);
    if (history.seenCompleted.has(job.id)) {
      assert.equal(record.state, JobState.Completed, `${context}: job ${job.id} left Completed`);
    }
    if (record.state === JobState.Completed) history.seenCompleted.add(job.id);
  }

  const sortRows = (
    rows: readonly { state: number; kind: string; count: number }[],
  ): { state: number; kind: string; count: number }[] =>
    rows
      .map(({ state, kind, count }) => ({ state, kind, count }))
      .sort((a, b) => a.state - b.state || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
  const scopes: [string, ScopeFilter, ModelScopeFilter][] = [
    ['any', ANY_SCOPE, { any: true }],
    [TENANT_A, tenantScope(TENANT_A), { any: false, scope: TENANT_A }],
    [TENANT_B, tenantScope(TENANT_B), { any: false, scope: TENANT_B }],
    ['system', SYSTEM_SCOPE, { any: false, scope: null }],
  ];
  for (const [name, engineScope, modelScope] of scopes) {
    same(sortRows(await queue.counts(engineScope)), model.counts(modelScope), `${context}\n  counts(${name})`);
  }

  // At most one live lease per job: the leased set holds each job once, and exactly the model's leased jobs.
  const leasedIds = (await queue.leased()).map((r) => r.jobId);
  assert.equal(new Set(leasedIds).size, leasedIds.length, `${context}: a job appears twice among leased jobs`);
  same(
    [...leasedIds].sort(),
    model.jobs
      .filter((j) => j.state === JobState.Leased)
      .map((j) => j.id)
      .sort(),
    `${context}\n  findLeasedAny`,
  );

  // Listings per state across every scope: newest first in pages of 3 (page tokens between
  // scopes and priorities), system jobs included; oldest first in one page, without them.
  for (const state of STATES_LISTED) {
    const newest: string[] = [];
    let pageToken: string | null = null;
    do {
      const page: ListPage = await queue.list({
        scope: ANY_SCOPE,
        state,
        limit: 3,
        includeSystem: true,
        ...(pageToken === null ? {} : { pageToken }),
      });
      newest.push(...page.jobs.map((r) => r.jobId));
      pageToken = page.nextPageToken;
    } while (pageToken !== null && newest.length <= model.jobs.length);
    same(
      newest,
      model.listed(state, 'newest_first', true).map((j) => j.id),
      `${context}\n  list(${JOB_STATE_NAMES[state]}) newest first`,
    );
    const oldest = await queue.list({ scope: ANY_SCOPE, state, limit: 1000, order: 'oldest_first' });
    same(
      oldest.jobs.map((r) => r.jobId),
      model.listed(state, 'oldest_first', false).map((j) => j.id),
      `${context}\n  list(${JOB_STATE_NAMES[state]}) oldest first, no system jobs`,
    );
  }

  same(await store.nextGateAt(ANY_SCOPE, now), model.nextGate(now), `${context}\n  nextGateAt`);
  same(
    (await queue.blockedKeys()).map((k) => [k.tenant, k.orderKey, k.head?.jobId ?? null, k.waiting]),
    model.blockedKeys(),
    `${context}\n  blockedKeys`,
  );
  same(
    (await queue.kindLimits()).map((l) => [l.kindPrefix, l.concurrency, l.leased, l.tokens]),
    model.limitRows(now),
    `${context}\n  kindLimits`,
  );
  same(
    (await queue.tenantLimits()).map((l) => [l.tenant, l.concurrency, l.weight, l.leased, l.tokens]),
    model.tenantRows(now),
    `${context}\n  tenantLimits`,
  );
}
