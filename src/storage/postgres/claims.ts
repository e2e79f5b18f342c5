/**
 * The claim: Pending jobs leased in one transaction with `FOR UPDATE SKIP LOCKED`, so two
 * servers never lease the same job and never wait on each other. Three paths share its first
 * round trip (BEGIN, the gates that fell due opened, the limits read): the key-order scan, the
 * fair order over tenants (`core/fair-order.ts`), and, when kind limits exist, a claim within the
 * lanes' room. The statements are in `sql/claims.ts`.
 */
import type pg from 'pg';
import { fairPick } from '../../core/fair-order.ts';
import { LaneBudget, laneMayServe, laneRoom, pickWithinLimits, type TokenBucket } from '../../core/kind-limits.ts';
import { leasesSystemKinds } from '../../core/transitions.ts';
import { SYSTEM_SCOPE, type JobRecord, type ScopeFilter } from '../../core/types.ts';
import { scopeOfTenant } from '../../codec/keys.ts';
import { encodeRecord } from '../../codec/value.ts';
import type { ClaimParams } from '../types.ts';
import { InDoubt, named, sqlLiteral, statementName, type Db, type StoreContext } from './connection.ts';
import type { Announce } from './listener.ts';
import {
  claimGatesQuery,
  claimQuery,
  fairClaimQuery,
  fairLaneClaimQuery,
  laneClaimQuery,
  type ClaimRow,
  type FairRow,
} from './sql/claims.ts';
import { bucketOfRow, LIMIT_COLUMNS, limitOfRow, type LimitRow } from './sql/controls.ts';
import { writeMany } from './writes.ts';
import { pickWithTenantLimits } from './tenant-limits.ts';
import { WeightedTurns } from '../../core/tenant-limits.ts';

/** Leases jobs for the store's `claim`; holds the fair order's cursor and what each connection has prepared. */
export class Claims {
  /** The fair order's cursor: the scope of the tenant this store's fair claims served last. */
  private fairCursor: Buffer | null = null;
  /** The weighted fair order's credits, while tenant limits exist (`core/tenant-limits.ts`). */
  private readonly turns = new WeightedTurns();
  /**
   * The claim's gate opening and its read of the limits, in one statement (`$1` is now): a
   * data-modifying WITH runs to completion whether or not the query reads it.
   */
  private readonly claimGates: string;
  /** The claim statements prepared on each connection (`claimRows`), to EXECUTE by name. */
  private readonly preparedOn = new WeakMap<pg.PoolClient, Set<string>>();
  private readonly t: string;

  constructor(
    private readonly ctx: StoreContext,
    /** Tells the other servers' watchers of committed transitions (`Listener.announced`). */
    private readonly announced: Announce,
  ) {
    this.t = ctx.t;
    this.claimGates = claimGatesQuery(ctx.t);
  }

  async claim(params: ClaimParams): Promise<JobRecord[]> {
    // A claim whose connection failed before COMMIT leased nothing, so it runs again. One whose
    // COMMIT went unanswered looks for its leases in the rows: if they are there it returns
    // them (else they would sit leased to nobody until their leases expired); if they are not,
    // or the rows cannot be read either, it runs again. That cannot lease a job twice: a job
    // leased once is no longer Pending.
    return this.ctx.retrying(async () => {
      try {
        return this.announced(await this.claimOnce(params));
      } catch (error) {
        if (!(error instanceof InDoubt)) throw error;
        const leased = error.result as JobRecord[];
        const stored = await this.ctx.storedRecords(leased.map((r) => r.jobId));
        const landed = leased.filter((r) => stored.get(r.jobId)?.equals(encodeRecord(r)));
        if (landed.length === 0 && leased.length > 0) throw error.cause;
        return this.announced(landed);
      }
    });
  }

  private async claimOnce(params: ClaimParams): Promise<JobRecord[]> {
    if (!Number.isSafeInteger(params.now)) throw new Error(`claim: now ${params.now} is not an integer`);
    // The first round trip begins the transaction, opens the gates that are due (so the ready
    // index holds every eligible job) and reads which limits exist: none (the usual case) leaves
    // the claim one statement over `jobs_ready`, whose rows are all unlimited. BEGIN and the rest
    // travel as one simple-protocol query, which takes no parameters (`now` is a checked
    // integer). Prepared, the rest is EXECUTEd there by name, planned once; a connection runs it
    // by name once first, after a BEGIN of its own, to prepare it.
    // The claim's first statement (the key-order scan, or the fair claim's first round) rides in
    // the same round trip once this connection has it prepared: EXECUTEd with its values written
    // as literals (`sqlLiteral`). When limits exist, its rows (locked, unlimited) go unused.
    const gates = this.claimGates;
    const fair = params.fair === true && params.scope.type === 'any';
    const first = fair
      ? this.fairFirstRound(params.kinds, params.limit)
      : this.keyOrderQuery(params.scope, params.kinds, params.limit);
    let prepareGates = false;
    let firstRode = false;
    const begin = (db: Db): string => {
      if (!this.ctx.prepare) return `BEGIN; ${gates.replace('$1', String(params.now))}`;
      const prepared = this.preparedOn.get(db);
      if (prepared?.has(statementName(gates)) !== true) {
        prepareGates = true;
        return 'BEGIN';
      }
      const head = `BEGIN; EXECUTE ${statementName(gates)}(${params.now})`;
      if (first === null || !prepared.has(statementName(first.text))) return head;
      firstRode = true;
      return `${head}; EXECUTE ${statementName(first.text)}(${first.values.map(sqlLiteral).join(', ')})`;
    };
    return this.ctx.tx(async (db, begun) => {
      let limited: { kind_prefix: string | null }[];
      if (prepareGates) {
        limited = await this.claimRows<{ kind_prefix: string | null }>(db, gates, [params.now]);
      } else {
        limited = (begun[begun.length - (firstRode ? 2 : 1)]?.rows ?? []) as { kind_prefix: string | null }[];
      }
      const firstRows = firstRode ? ((begun[begun.length - 1]?.rows ?? []) as FairRow[]) : null;
      const tenantLimited = limited.some((row) => row.kind_prefix === null);
      const lanes = limited
        .map((row) => row.kind_prefix)
        .filter((lane): lane is string => lane !== null && laneMayServe(lane, params.kinds));
      let records: JobRecord[];
      if (lanes.length > 0 || tenantLimited) {
        records = await this.limitedRecords(db, params, lanes, tenantLimited);
      } else {
        const rows = fair
          ? await this.fairRows(db, params.kinds, params.limit, firstRows)
          : (firstRows ?? (await this.keyOrderRows(db, params.scope, params.kinds, params.limit)));
        records = rows.map((row) => this.ctx.decode(row)).filter((r): r is JobRecord => r !== null);
      }
      const leased = records.map((record) => params.lease(record));
      await writeMany(
        this.ctx,
        db,
        leased.map((record) => ({ record, expected: null })),
        params.now,
      );
      return leased;
    }, begin);
  }

  /**
   * A claim that may take from limited lanes (`lanes`: those its kinds may serve). Their rows of
   * `kind_limits` are locked first, in prefix order, so limited claims of every server take
   * turns per lane, and the statements after see every lease the claims before them made. Then
   * each lane's room (`LaneBudget`: concurrency less leased, whole tokens), the candidates (the
   * unlimited ones and at most the room of each lane with room; a lane without room is not
   * read), the claim rule over them in the claim's order, and the buckets spent.
   */
  private async limitedRecords(
    db: Db,
    params: ClaimParams,
    lanes: readonly string[],
    tenantLimited: boolean,
  ): Promise<JobRecord[]> {
    const { rows: limitRows } = await db.query<LimitRow>(
      `SELECT ${LIMIT_COLUMNS} FROM ${this.t}.kind_limits WHERE kind_prefix = ANY($1::text[])
       ORDER BY kind_prefix FOR UPDATE`,
      [lanes],
    );
    const { rows: counts } = await db.query<{ lane: string; n: string }>(
      `SELECT lane, count(*) AS n FROM ${this.t}.jobs WHERE state = 1 AND lane = ANY($1::text[]) GROUP BY lane`,
      [lanes],
    );
    const limits = limitRows.map(limitOfRow);
    const leased = new Map(counts.map((row) => [row.lane, Number(row.n)]));
    const buckets = new Map(limitRows.map((row) => [row.kind_prefix, bucketOfRow(row)]));
    const bucketOf = (lane: string): TokenBucket | null => buckets.get(lane) ?? null;
    const budget = new LaneBudget(limits, (lane) => leased.get(lane) ?? 0, bucketOf, params.now);
    const rooms = limits.map((limit) =>
      Math.min(
        params.limit,
        laneRoom(limit, leased.get(limit.kindPrefix) ?? 0, bucketOf(limit.kindPrefix), params.now),
      ),
    );
    const laneArgs = [limits.map((l) => l.kindPrefix), rooms];
    const candidates = async (scope: ScopeFilter): Promise<JobRecord[]> => {
      const query = laneClaimQuery(this.t, scope, params.kinds);
      const { rows } = await db.query<ClaimRow>(
        named(this.ctx.prepare, query.text, [params.limit, ...laneArgs, ...query.values]),
      );
      return rows.map((row) => this.ctx.decode(row)).filter((r): r is JobRecord => r !== null);
    };
    let chosen: JobRecord[];
    if (tenantLimited) {
      chosen = await this.tenantLimitedRecords(db, params, budget, laneArgs, candidates);
    } else if (params.fair === true && params.scope.type === 'any') {
      chosen = [];
      if (leasesSystemKinds(params.kinds)) {
        chosen = pickWithinLimits(await candidates(SYSTEM_SCOPE), params.limit, budget);
      }
      const query = fairLaneClaimQuery(this.t, params.kinds);
      const { rows } = await db.query<ClaimRow & { scope: Buffer }>(
        named(this.ctx.prepare, query.text, [params.limit, ...laneArgs, ...query.values]),
      );
      const tenantJobs = rows
        .map((row) => ({ record: this.ctx.decode(row), scope: row.scope.toString('hex'), system: false }))
        .filter((c): c is { record: JobRecord; scope: string; system: false } => c.record !== null)
        .sort((a, b) => compareKeyOrder(a.record, b.record));
      const picked = fairPick(
        tenantJobs,
        params.limit - chosen.length,
        this.fairCursor === null ? null : this.fairCursor.toString('hex'),
        (c) => budget.take(c.record.kind),
      );
      chosen.push(...picked.chosen.map((c) => c.record));
      if (picked.cursor !== null) this.fairCursor = Buffer.from(picked.cursor, 'hex');
    } else {
      chosen = pickWithinLimits(await candidates(params.scope), params.limit, budget);
    }
    const spent = budget.spent(bucketOf, params.now);
    if (spent.size > 0) {
      await db.query(
        `UPDATE ${this.t}.kind_limits AS kl SET tokens = u.tokens, refilled_at = u.refilled_at
         FROM unnest($1::text[], $2::float8[], $3::bigint[]) AS u(kind_prefix, tokens, refilled_at)
         WHERE kl.kind_prefix = u.kind_prefix`,
        [[...spent.keys()], [...spent.values()].map((b) => b.tokens), [...spent.values()].map((b) => b.refilledAt)],
      );
    }
    return chosen;
  }

  /**
   * The candidates while tenant limits exist: in one scope, its first rows (`laneClaimQuery`);
   * across every scope, system jobs first when asked for, then the first `limit` of each tenant
   * (`fairLaneClaimQuery`), in key order. `pickWithTenantLimits` chooses among them.
   */
  private async tenantLimitedRecords(
    db: Db,
    params: ClaimParams,
    budget: LaneBudget,
    laneArgs: unknown[],
    candidates: (scope: ScopeFilter) => Promise<JobRecord[]>,
  ): Promise<JobRecord[]> {
    const found: { record: JobRecord; scope: string }[] = [];
    const add = (records: readonly JobRecord[]): void => {
      for (const record of records) found.push({ record, scope: scopeOfTenant(record.tenant).toString('hex') });
    };
    if (params.scope.type !== 'any') add(await candidates(params.scope));
    else {
      if (leasesSystemKinds(params.kinds)) add(await candidates(SYSTEM_SCOPE));
      const query = fairLaneClaimQuery(this.t, params.kinds);
      const { rows } = await db.query<ClaimRow>(
        named(this.ctx.prepare, query.text, [params.limit, ...laneArgs, ...query.values]),
      );
      add(
        rows
          .map((row) => this.ctx.decode(row))
          .filter((r): r is JobRecord => r !== null)
          .sort(compareKeyOrder),
      );
    }
    const fair = params.fair === true && params.scope.type === 'any';
    return pickWithTenantLimits(db, this.t, found, { limit: params.limit, now: params.now, fair }, budget, this.turns);
  }

  private async keyOrderRows(
    db: Db,
    scope: ScopeFilter,
    kinds: readonly string[] | null,
    limit: number,
  ): Promise<ClaimRow[]> {
    const query = this.keyOrderQuery(scope, kinds, limit);
    return this.claimRows<ClaimRow>(db, query.text, query.values);
  }

  /** The key-order claim, as `keyOrderRows` runs it. */
  private keyOrderQuery(
    scope: ScopeFilter,
    kinds: readonly string[] | null,
    limit: number,
  ): { text: string; values: unknown[] } {
    const query = claimQuery(this.t, scope, kinds);
    return { text: query.text, values: [limit, ...query.values] };
  }

  /** The fair claim's first round (`fairRows`), or `null` when system jobs come first (another statement). */
  private fairFirstRound(kinds: readonly string[] | null, limit: number): { text: string; values: unknown[] } | null {
    if (leasesSystemKinds(kinds)) return null;
    return fairClaimQuery(this.t, kinds, this.fairCursor, limit, []);
  }

  /**
   * Run a claim statement (the gates, a scan) by name, and remember it is prepared on `db`, so
   * the next claim there may EXECUTE it in its BEGIN round trip.
   */
  private async claimRows<R extends pg.QueryResultRow>(db: Db, text: string, values: unknown[]): Promise<R[]> {
    const { rows } = await db.query<R>(named(this.ctx.prepare, text, values));
    if (this.ctx.prepare) {
      const prepared = this.preparedOn.get(db) ?? new Set<string>();
      prepared.add(statementName(text));
      this.preparedOn.set(db, prepared);
    }
    return rows;
  }

  /**
   * Rows in the fair order (`core/fair-order.ts`): system jobs first, then tenants in turn from the
   * cursor on, wrapping around. A round finds the next tenants with ready work (one index probe
   * each), then locks as many jobs of each as the round may need, and takes them round by round:
   * one job per tenant per turn. A round that stops short because tenants ran out of work is
   * followed by another, so a single busy tenant costs a few statements, not one per job.
   */
  private async fairRows(
    db: Db,
    kinds: readonly string[] | null,
    limit: number,
    firstRound: readonly FairRow[] | null = null,
  ): Promise<ClaimRow[]> {
    const rows: ClaimRow[] = [];
    let given = firstRound;
    if (leasesSystemKinds(kinds)) {
      rows.push(...(await this.keyOrderRows(db, SYSTEM_SCOPE, kinds, limit)));
    }
    while (rows.length < limit) {
      const remaining = limit - rows.length;
      const taken = rows.map((row) => row.job_id);
      const query = fairClaimQuery(this.t, kinds, this.fairCursor, remaining, taken);
      const locked = given ?? (await this.claimRows<FairRow>(db, query.text, query.values));
      given = null;
      if (locked.length === 0) break;
      // Rows come in tenant order (from the cursor on), each tenant's in key order: number
      // each tenant's turns, and take the jobs turn by turn.
      const turns = new Map<string, number>();
      const ordered = locked
        .map((row) => {
          const turn = turns.get(row.ord) ?? 0;
          turns.set(row.ord, turn + 1);
          return { row, turn, ord: Number(row.ord) };
        })
        .sort((x, y) => x.turn - y.turn || x.ord - y.ord)
        .slice(0, remaining);
      for (const { row } of ordered) {
        rows.push({ job_id: row.job_id, record: row.record });
        this.fairCursor = row.scope;
      }
    }
    return rows;
  }
}

/** Key order: (scope, priority, created_at, job_id), as the ready indexes (`jobs_ready`, `jobs_lanes`) sort. */
function compareKeyOrder(a: JobRecord, b: JobRecord): number {
  return (
    Buffer.compare(scopeOfTenant(a.tenant), scopeOfTenant(b.tenant)) ||
    a.priority - b.priority ||
    a.createdAt - b.createdAt ||
    (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0)
  );
}
