/**
 * The commands of the model-based test, as plain data, and their fast-check
 * arbitraries. Every reference to a job or a lease is an index resolved at run
 * time (modulo what exists then), so any subsequence of a command list is still
 * a valid program: fast-check shrinks by dropping commands and shrinking fields.
 */
import fc from 'fast-check';

/** Scope slots of an enqueue: the two tenants, and the system scope. */
export type EnqueueScope = 'a' | 'b' | 'system';
/** Scope filter of a lease. */
export type LeaseScope = EnqueueScope | 'any';
/**
 * The scope argument of a fenced submission or a retry:
 * omitted (the default, every scope), explicitly every scope, the job's own scope, or another one.
 */
export type OpScope = 'default' | 'any' | 'own' | 'other';
/**
 * How a submission's fence relates to the lease it was granted with:
 * as granted, another worker, the generation before, one not granted yet,
 * or another worker with the generation before (both checks fail: which one wins?).
 */
export type FenceVariant = 'exact' | 'wrongWorker' | 'oldGen' | 'nextGen' | 'wrongWorkerOldGen';

export interface JobSpec {
  /** Index into the scope's kind list; wraps. */
  readonly kind: number;
  /** `true`: a kind of the other family (a `system:` kind in a tenant scope or the reverse), refused. */
  readonly wrongKindFamily: boolean;
  readonly priority: number | undefined;
  readonly delayMs: number | undefined;
  /** `notBefore` relative to now, in seconds; wins over `delayMs`. */
  readonly notBeforeOffsetSecs: number | undefined;
  readonly maxAttempts: number | undefined;
  readonly idempotencyKey: string | undefined;
  /** The job's own attempt timeout: shorter than, between and beyond the model's 30 s lease TTL. */
  readonly timeoutSecs: number | undefined;
  /** Latest wins: replaces the Pending job holding the key in its scope. */
  readonly supersedeKey: string | undefined;
  /** With a supersede key: `leased` cancels a Leased holder too (left out: `pending`, it runs on). */
  readonly supersede: 'pending' | 'leased' | undefined;
  /** With a supersede key: debounce (trailing), due this long after the enqueue; no delay then. */
  readonly debounceMs: number | undefined;
  /** With `debounceMs`: due at most this long after the run's first enqueue. */
  readonly debounceMaxMs: number | undefined;
  /** An ordered key (`NewJob.orderKey`): one job of a key at a time, in enqueue order. */
  readonly orderKey: string | undefined;
  /** With an ordered key: what going Dead does to it (left out: `block`). */
  readonly orderOnDead: 'block' | 'release' | undefined;
}

export type Command =
  | { readonly t: 'enqueue'; readonly scope: EnqueueScope; readonly jobs: readonly JobSpec[] }
  | {
      readonly t: 'lease';
      readonly scope: LeaseScope;
      /** Index into {@link KIND_FILTERS}. */
      readonly kinds: number;
      readonly worker: number;
      /** `null`: `leaseNextAt`; a number: `leaseBatchAt` with that limit. */
      readonly limit: number | null;
    }
  | { readonly t: 'extend'; readonly lease: LeaseRef; readonly fence: FenceVariant; readonly scope: OpScope }
  | {
      readonly t: 'checkpoint';
      readonly lease: LeaseRef;
      readonly fence: FenceVariant;
      readonly scope: OpScope;
      readonly bytes: readonly number[];
    }
  | {
      readonly t: 'complete';
      readonly lease: LeaseRef;
      readonly fence: FenceVariant;
      readonly scope: OpScope;
      readonly successors: readonly JobSpec[];
    }
  | {
      readonly t: 'fail';
      readonly lease: LeaseRef;
      readonly fence: FenceVariant;
      readonly scope: OpScope;
      readonly retryable: boolean | undefined;
    }
  | { readonly t: 'release'; readonly lease: LeaseRef; readonly fence: FenceVariant; readonly scope: OpScope }
  /**
   * A worker's turn, as a sequence of the commands above: lease the next job of any scope and
   * kind ({@link EVERY_KIND_BY_NAME}), then settle it with the fence just granted, hand it
   * back, or abandon it to the reaper.
   */
  | {
      readonly t: 'work';
      readonly worker: number;
      readonly then: 'complete' | 'fail' | 'failPermanently' | 'checkpoint' | 'release' | 'abandon';
    }
  | { readonly t: 'reap' }
  /** Operator retry of a job; with `dead`, one that is Dead if any is (index 0 = newest). */
  | { readonly t: 'retry'; readonly dead: boolean; readonly job: number; readonly scope: OpScope }
  /** Cancel a job; with `live`, one that is Pending or Leased if any is (index 0 = newest). */
  | { readonly t: 'cancel'; readonly live: boolean; readonly job: number; readonly scope: OpScope }
  /** Discard a job; with `dead`, one that is Dead if any is (index 0 = newest). */
  | { readonly t: 'discard'; readonly dead: boolean; readonly job: number; readonly scope: OpScope }
  /** Run a job now; with `gated`, one that is Pending behind a gate if any is (index 0 = newest). */
  | { readonly t: 'runNow'; readonly gated: boolean; readonly job: number; readonly scope: OpScope }
  /** Cancel every Pending and/or Leased job of a scope filter whose kind starts with a prefix. */
  | {
      readonly t: 'cancelMatching';
      readonly scope: LeaseScope;
      /** Index into {@link CANCEL_PREFIXES}. */
      readonly prefix: number;
      readonly states: 'pending' | 'leased' | 'both';
    }
  /** Pause (or resume) a kind prefix in a scope or everywhere. */
  | {
      readonly t: 'pause';
      readonly scope: EnqueueScope | 'everywhere';
      /** Index into {@link PAUSE_PREFIXES}. */
      readonly prefix: number;
      readonly resume: boolean;
    }
  /** Set a kind limit (replacing the prefix's), valid or not. */
  | {
      readonly t: 'setLimit';
      /** Index into {@link LIMIT_PREFIXES}. */
      readonly prefix: number;
      /** `0` is refused. */
      readonly concurrency: number | null;
      /** Index into {@link LIMIT_RATES}. */
      readonly rate: number;
    }
  /** Clear a kind limit. */
  | { readonly t: 'clearLimit'; readonly prefix: number }
  /** Set a tenant limit (replacing the tenant's), valid or not. */
  | {
      readonly t: 'setTenantLimit';
      readonly tenant: 'a' | 'b';
      /** `0` is refused. */
      readonly concurrency: number | null;
      /** Index into {@link LIMIT_RATES}. */
      readonly rate: number;
      /** `0` and `1001` are refused. */
      readonly weight: number;
    }
  /** Clear a tenant limit. */
  | { readonly t: 'clearTenantLimit'; readonly tenant: 'a' | 'b' }
  /** Move the clock; with `reap`, run the reaper right after (as its timer would). */
  | { readonly t: 'advance'; readonly secs: number; readonly reap: boolean }
  /** An operation on a job id the store never issued: `not_found` for all of them. */
  | {
      readonly t: 'ghost';
      readonly op:
        'extend' | 'checkpoint' | 'complete' | 'fail' | 'release' | 'retry' | 'cancel' | 'discard' | 'runNow' | 'show';
    }
  /**
   * An operator's release of an ordered key (`nope`: a key no job has); with `blocked`, the first
   * blocked key if any is.
   */
  | {
      readonly t: 'releaseKey';
      readonly blocked: boolean;
      readonly scope: EnqueueScope;
      readonly key: 'o1' | 'o2' | 'nope';
    }
  /** Close and reopen the store (RocksDB only; a no-op in memory). */
  | { readonly t: 'restart' };

export const TENANT_A = 'acme';
export const TENANT_B = 'globex';
export const WORKERS = ['w1', 'w2', 'w3'] as const;
export const TENANT_KINDS = ['ingest:csv', 'ingest:json', 'embed'] as const;
export const SYSTEM_KINDS = ['system:compact', 'system:vacuum'] as const;
/**
 * Lease kind filters: `undefined` (option omitted), empty (also every kind), prefixes, one
 * matching nothing, and prefixes of system kinds that are not system prefixes (`sys`: no
 * system job), and every kind named (tenant kinds and `system:`).
 */
export const KIND_FILTERS: readonly (readonly string[] | undefined)[] = [
  undefined,
  [],
  ['ingest:'],
  ['embed'],
  ['system:'],
  ['ingest:json', 'system:c'],
  ['nothing-matches'],
  ['sys', 'embed'],
  ['ingest:', 'embed', 'system:'],
];
/** The index in {@link KIND_FILTERS} of the filter naming every kind, system kinds included: a worker's turn. */
export const EVERY_KIND_BY_NAME = KIND_FILTERS.length - 1;
export const IDEMPOTENCY_KEYS = ['k1', 'k2', 'k3'] as const;
/** Two keys, so an enqueue often meets a holder of its key and sometimes a holder of the other. */
export const SUPERSEDE_KEYS = ['s1', 's2'] as const;
/** Kind prefixes of a bulk cancel: none (every kind), a family, one kind, system kinds, nothing. */
export const CANCEL_PREFIXES = [undefined, 'ingest:', 'embed', 'system:', 'nothing-matches'] as const;
/** Kind prefixes the model pauses: tenant kinds, system kinds, and one no kind has. */
export const PAUSE_PREFIXES = ['ingest:', 'embed', 'system:', 'nothing-matches'] as const;
/** Kind prefixes the model limits: nested (`ingest:` and `ingest:json`, `e` and `embed`), system kinds, and `s`, which covers no system kind. */
export const LIMIT_PREFIXES = ['ingest:', 'ingest:json', 'e', 'embed', 'system:', 's'] as const;
/** Rates the model sets: none, slow ones whose tokens refill across the clock steps, and one refused. */
export const LIMIT_RATES = [null, '1/10s', '2/30s', '3/1m', 'many/s'] as const;

const opScope: fc.Arbitrary<OpScope> = fc.oneof(
  { arbitrary: fc.constant<OpScope>('default'), weight: 6 },
  { arbitrary: fc.constant<OpScope>('any'), weight: 1 },
  { arbitrary: fc.constant<OpScope>('own'), weight: 2 },
  { arbitrary: fc.constant<OpScope>('other'), weight: 1 },
);

const fence: fc.Arbitrary<FenceVariant> = fc.oneof(
  { arbitrary: fc.constant<FenceVariant>('exact'), weight: 8 },
  { arbitrary: fc.constant<FenceVariant>('wrongWorker'), weight: 2 },
  { arbitrary: fc.constant<FenceVariant>('oldGen'), weight: 1 },
  { arbitrary: fc.constant<FenceVariant>('nextGen'), weight: 1 },
  { arbitrary: fc.constant<FenceVariant>('wrongWorkerOldGen'), weight: 2 },
);

/**
 * A granted lease: with `live`, one still held (the job Leased under that worker and generation),
 * if any; otherwise any lease ever granted. Index 0 is the newest.
 */
export interface LeaseRef {
  readonly live: boolean;
  readonly index: number;
}

const leaseRef: fc.Arbitrary<LeaseRef> = fc.record({
  live: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
  index: fc.oneof({ arbitrary: fc.nat(2), weight: 4 }, { arbitrary: fc.nat(30), weight: 1 }),
});

/** `undefined` (the option omitted) `absent` times out of `absent + 1`. */
function sometimes<T>(arbitrary: fc.Arbitrary<T>, absent: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ arbitrary: fc.constant(undefined), weight: absent }, { arbitrary, weight: 1 });
}

export const jobSpec: fc.Arbitrary<JobSpec> = fc
  .record({
    kind: fc.nat(5),
    wrongKindFamily: fc.oneof(
      { arbitrary: fc.constant(false), weight: 40 },
      { arbitrary: fc.constant(true), weight: 1 },
    ),
    priority: sometimes(fc.constantFrom(0, 7, 128, 255), 1),
    delayMs: sometimes(fc.constantFrom(0, 5_000, 35_000, 120_000), 4),
    notBeforeOffsetSecs: sometimes(fc.constantFrom(-20, 15, 45), 12),
    maxAttempts: sometimes(fc.constantFrom(1, 2, 5, 5, 5), 1),
    idempotencyKey: sometimes(fc.constantFrom(...IDEMPOTENCY_KEYS), 3),
    timeoutSecs: sometimes(fc.constantFrom(10, 45, 100), 3),
    supersedeKey: sometimes(fc.constantFrom(...SUPERSEDE_KEYS), 1),
    supersede: sometimes(fc.constantFrom('pending' as const, 'leased' as const), 1),
    // Windows that the clock steps straddle; a max wait of one window, or a few.
    debounceMs: sometimes(fc.constantFrom(5_000, 30_000), 1),
    debounceMaxMs: sometimes(fc.constantFrom(30_000, 60_000), 1),
    orderKey: sometimes(fc.constantFrom('o1', 'o2'), 2),
    orderOnDead: sometimes(fc.constantFrom('block' as const, 'release' as const), 1),
  })
  // Only the combinations a store accepts: a supersede key or an ordered key, never both; the
  // supersede mode and debounce with a supersede key, a debounce without a delay, a max wait with
  // a window at least as long; the dead policy with an ordered key.
  .map((spec) => {
    const orderKey = spec.supersedeKey !== undefined ? undefined : spec.orderKey;
    const keyed = spec.supersedeKey !== undefined;
    const debounceMs = keyed ? spec.debounceMs : undefined;
    const debounceMaxMs =
      debounceMs === undefined || spec.debounceMaxMs === undefined
        ? undefined
        : Math.max(debounceMs, spec.debounceMaxMs);
    return {
      ...spec,
      orderKey,
      orderOnDead: orderKey === undefined ? undefined : spec.orderOnDead,
      supersede: keyed ? spec.supersede : undefined,
      debounceMs,
      debounceMaxMs,
      ...(debounceMs === undefined ? {} : { delayMs: undefined, notBeforeOffsetSecs: undefined }),
    };
  });

const enqueueScope: fc.Arbitrary<EnqueueScope> = fc.oneof(
  { arbitrary: fc.constant<EnqueueScope>('a'), weight: 3 },
  { arbitrary: fc.constant<EnqueueScope>('b'), weight: 3 },
  { arbitrary: fc.constant<EnqueueScope>('system'), weight: 1 },
);

const leaseScope: fc.Arbitrary<LeaseScope> = fc.oneof(
  { arbitrary: fc.constant<LeaseScope>('any'), weight: 4 },
  { arbitrary: fc.constant<LeaseScope>('a'), weight: 2 },
  { arbitrary: fc.constant<LeaseScope>('b'), weight: 2 },
  { arbitrary: fc.constant<LeaseScope>('system'), weight: 1 },
);

/** Clock steps that straddle the lease TTL (30 s) and the backoff steps (10 s, 40 s, capped at 100 s). */
export const ADVANCE_SECS = [1, 5, 9, 10, 11, 29, 30, 31, 40, 41, 60, 100, 101, 200] as const;

const enqueueJobs = fc.oneof(
  { arbitrary: fc.array(jobSpec, { minLength: 1, maxLength: 1 }), weight: 3 },
  { arbitrary: fc.array(jobSpec, { minLength: 2, maxLength: 3 }), weight: 1 },
);

/** The arbitrary of each command type. */
const COMMANDS: { readonly [T in Command['t']]: fc.Arbitrary<Extract<Command, { t: T }>> } = {
  enqueue: fc.record({ t: fc.constant('enqueue' as const), scope: enqueueScope, jobs: enqueueJobs }),
  lease: fc.record({
    t: fc.constant('lease' as const),
    scope: leaseScope,
    kinds: fc.oneof(
      { arbitrary: fc.constant(0), weight: 3 },
      { arbitrary: fc.nat(KIND_FILTERS.length - 1), weight: 2 },
    ),
    worker: fc.nat(WORKERS.length - 1),
    limit: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null, freq: 2 }),
  }),
  extend: fc.record({ t: fc.constant('extend' as const), lease: leaseRef, fence, scope: opScope }),
  checkpoint: fc.record({
    t: fc.constant('checkpoint' as const),
    lease: leaseRef,
    fence,
    scope: opScope,
    bytes: fc.array(fc.nat(255), { maxLength: 4 }),
  }),
  complete: fc.record({
    t: fc.constant('complete' as const),
    lease: leaseRef,
    fence,
    scope: opScope,
    successors: fc.oneof(
      { arbitrary: fc.constant([]), weight: 3 },
      { arbitrary: fc.array(jobSpec, { minLength: 1, maxLength: 2 }), weight: 1 },
    ),
  }),
  fail: fc.record({
    t: fc.constant('fail' as const),
    lease: leaseRef,
    fence,
    scope: opScope,
    retryable: fc.constantFrom(undefined, true, true, false),
  }),
  release: fc.record({ t: fc.constant('release' as const), lease: leaseRef, fence, scope: opScope }),
  work: fc.record({
    t: fc.constant('work' as const),
    worker: fc.nat(WORKERS.length - 1),
    then: fc.oneof(
      { arbitrary: fc.constant('fail' as const), weight: 4 },
      { arbitrary: fc.constant('complete' as const), weight: 2 },
      { arbitrary: fc.constant('failPermanently' as const), weight: 1 },
      { arbitrary: fc.constant('checkpoint' as const), weight: 1 },
      { arbitrary: fc.constant('release' as const), weight: 1 },
      { arbitrary: fc.constant('abandon' as const), weight: 2 },
    ),
  }),
  reap: fc.constant({ t: 'reap' as const }),
  retry: fc.record({
    t: fc.constant('retry' as const),
    dead: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
    job: fc.nat(10),
    scope: opScope,
  }),
  cancel: fc.record({
    t: fc.constant('cancel' as const),
    live: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
    job: fc.nat(10),
    scope: opScope,
  }),
  discard: fc.record({
    t: fc.constant('discard' as const),
    dead: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
    job: fc.nat(10),
    scope: opScope,
  }),
  runNow: fc.record({
    t: fc.constant('runNow' as const),
    gated: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
    job: fc.nat(10),
    scope: opScope,
  }),
  cancelMatching: fc.record({
    t: fc.constant('cancelMatching' as const),
    scope: leaseScope,
    prefix: fc.nat(CANCEL_PREFIXES.length - 1),
    states: fc.constantFrom('pending' as const, 'leased' as const, 'both' as const),
  }),
  pause: fc.record({
    t: fc.constant('pause' as const),
    scope: fc.constantFrom('a' as const, 'b' as const, 'system' as const, 'everywhere' as const),
    prefix: fc.nat(PAUSE_PREFIXES.length - 1),
    resume: fc.boolean(),
  }),
  setLimit: fc.record({
    t: fc.constant('setLimit' as const),
    prefix: fc.nat(LIMIT_PREFIXES.length - 1),
    concurrency: fc.constantFrom(null, null, 0, 1, 1, 2, 3),
    rate: fc.oneof({ arbitrary: fc.constant(0), weight: 2 }, { arbitrary: fc.nat(LIMIT_RATES.length - 1), weight: 3 }),
  }),
  clearLimit: fc.record({ t: fc.constant('clearLimit' as const), prefix: fc.nat(LIMIT_PREFIXES.length - 1) }),
  setTenantLimit: fc.record({
    t: fc.constant('setTenantLimit' as const),
    tenant: fc.constantFrom('a' as const, 'b' as const),
    concurrency: fc.constantFrom(null, null, 0, 1, 2, 3),
    rate: fc.oneof({ arbitrary: fc.constant(0), weight: 3 }, { arbitrary: fc.nat(LIMIT_RATES.length - 1), weight: 2 }),
    weight: fc.constantFrom(1, 1, 2, 3, 4, 0, 1_001),
  }),
  clearTenantLimit: fc.record({
    t: fc.constant('clearTenantLimit' as const),
    tenant: fc.constantFrom('a' as const, 'b' as const),
  }),
  advance: fc.record({
    t: fc.constant('advance' as const),
    secs: fc.constantFrom(...ADVANCE_SECS),
    reap: fc.oneof({ arbitrary: fc.constant(false), weight: 3 }, { arbitrary: fc.constant(true), weight: 1 }),
  }),
  ghost: fc.record({
    t: fc.constant('ghost' as const),
    op: fc.constantFrom(
      'extend' as const,
      'checkpoint' as const,
      'complete' as const,
      'fail' as const,
      'release' as const,
      'retry' as const,
      'cancel' as const,
      'discard' as const,
      'runNow' as const,
      'show' as const,
    ),
  }),
  releaseKey: fc.record({
    t: fc.constant('releaseKey' as const),
    blocked: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
    scope: fc.constantFrom<EnqueueScope>('a', 'b', 'a', 'b', 'system'),
    key: fc.constantFrom('o1' as const, 'o2' as const, 'o1' as const, 'o2' as const, 'nope' as const),
  }),
  restart: fc.constant({ t: 'restart' as const }),
};

/** How often each command type is drawn (0 leaves it out), and arbitraries that replace the defaults. */
export interface CommandMix {
  readonly weights: { readonly [T in Command['t']]: number };
  readonly overrides?: { readonly [T in Command['t']]?: fc.Arbitrary<Extract<Command, { t: T }>> };
}

/** Every operation, many jobs: breadth (scopes, filters, idempotency, successors, stale fences). */
export const BROAD_MIX: CommandMix = {
  weights: {
    enqueue: 5,
    lease: 6,
    extend: 2,
    checkpoint: 2,
    complete: 4,
    fail: 4,
    release: 2,
    work: 5,
    reap: 2,
    retry: 2,
    cancel: 2,
    discard: 1,
    runNow: 1,
    cancelMatching: 1,
    pause: 2,
    setLimit: 2,
    clearLimit: 1,
    setTenantLimit: 2,
    clearTenantLimit: 1,
    advance: 5,
    ghost: 1,
    releaseKey: 1,
    restart: 1,
  },
};

/**
 * Few jobs, many failing worker turns, clock steps and reaps: depth, so single jobs run through
 * several attempts, the capped backoff, the reaper's dead-letter and operator retries.
 */
export const LIFECYCLE_MIX: CommandMix = {
  weights: {
    enqueue: 2,
    lease: 1,
    extend: 1,
    checkpoint: 0,
    complete: 1,
    fail: 1,
    release: 1,
    work: 8,
    reap: 3,
    retry: 2,
    cancel: 1,
    discard: 1,
    runNow: 2,
    cancelMatching: 0,
    pause: 0,
    setLimit: 1,
    clearLimit: 0,
    setTenantLimit: 1,
    clearTenantLimit: 0,
    advance: 6,
    ghost: 0,
    releaseKey: 1,
    restart: 1,
  },
  overrides: {
    enqueue: fc.record({
      t: fc.constant('enqueue' as const),
      scope: fc.constantFrom<EnqueueScope>('a', 'b', 'system'),
      jobs: fc.array(
        jobSpec.map((spec) => ({
          ...spec,
          idempotencyKey: undefined,
          maxAttempts: spec.maxAttempts === undefined ? undefined : 5,
        })),
        { minLength: 1, maxLength: 1 },
      ),
    }),
    work: fc.record({
      t: fc.constant('work' as const),
      worker: fc.nat(WORKERS.length - 1),
      then: fc.oneof(
        { arbitrary: fc.constant('fail' as const), weight: 8 },
        { arbitrary: fc.constant('abandon' as const), weight: 3 },
        { arbitrary: fc.constant('checkpoint' as const), weight: 1 },
        { arbitrary: fc.constant('release' as const), weight: 1 },
        { arbitrary: fc.constant('complete' as const), weight: 1 },
      ),
    }),
    advance: fc.record({
      t: fc.constant('advance' as const),
      // Exact boundaries (the TTL, the backoff steps) most often: leases expire, and gates open, on the dot.
      secs: fc.constantFrom(10, 10, 11, 30, 30, 30, 31, 40, 40, 41, 100, 100, 101),
      reap: fc.boolean(),
    }),
  },
};

/**
 * Keyed jobs only, one key of each sort in two tenants, and the operations that move keys on:
 * supersedes of Pending and Leased holders (and their holders' late results), debounce runs
 * across clock steps, ordered keys through failures, Dead heads of both policies, releases.
 */
export const KEYS_MIX: CommandMix = {
  weights: {
    ...LIFECYCLE_MIX.weights,
    enqueue: 6,
    lease: 2,
    complete: 2,
    fail: 2,
    work: 5,
    reap: 1,
    advance: 4,
    releaseKey: 3,
  },
  overrides: {
    enqueue: fc.record({
      t: fc.constant('enqueue' as const),
      // One tenant: every keyed job meets the others of its key.
      scope: fc.constant<EnqueueScope>('a'),
      jobs: fc.array(
        fc
          .tuple(jobSpec, fc.boolean())
          .map(([spec, ordered]) =>
            ordered
              ? {
                  ...spec,
                  supersedeKey: undefined,
                  supersede: undefined,
                  debounceMs: undefined,
                  debounceMaxMs: undefined,
                  orderKey: 'o1',
                }
              : {
                  ...spec,
                  supersedeKey: 's1',
                  orderKey: undefined,
                  orderOnDead: undefined,
                  // A debounce always with a max wait here: a run carried over is what this mix is for.
                  ...(spec.debounceMs === undefined ? {} : { debounceMaxMs: 60_000 }),
                },
          )
          .map((spec) => ({
            ...spec,
            idempotencyKey: undefined,
            maxAttempts: spec.maxAttempts === undefined ? undefined : 2,
          })),
        { minLength: 1, maxLength: 2 },
      ),
    }),
  },
};

export function commandArbitrary(mix: CommandMix, options: { restarts: boolean }): fc.Arbitrary<Command> {
  const arbitraries: fc.WeightedArbitrary<Command>[] = [];
  for (const t of Object.keys(COMMANDS) as Command['t'][]) {
    const weight = t === 'restart' && !options.restarts ? 0 : mix.weights[t];
    const arbitrary = (mix.overrides?.[t] ?? COMMANDS[t]) as fc.Arbitrary<Command>;
    if (weight > 0) arbitraries.push({ weight, arbitrary });
  }
  return fc.oneof(...arbitraries);
}

/** A command list: from the broad mix, the lifecycle mix or the keys mix, in turn at random. */
export function commandsArbitrary(options: { restarts: boolean; maxCommands: number }): fc.Arbitrary<Command[]> {
  const list = (mix: CommandMix): fc.Arbitrary<Command[]> =>
    fc.array(commandArbitrary(mix, options), { maxLength: options.maxCommands, size: 'max' });
  return fc.oneof(
    { arbitrary: list(BROAD_MIX), weight: 2 },
    { arbitrary: list(LIFECYCLE_MIX), weight: 2 },
    { arbitrary: list(KEYS_MIX), weight: 2 },
  );
}
