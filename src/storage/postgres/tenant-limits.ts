/**
 * Tenant limits on PostgreSQL (`core/tenant-limits.ts`): the `tenant_limits` table, and the claim
 * while any exists. Claims that take work while tenant limits exist lock every row of the table
 * (in tenant order, after the kind limits' rows), so they take turns, and each then counts the
 * leases of the limited tenants committed before it: a tenant's concurrency and rate hold across
 * every server, as a kind's do. The weighted order's credits belong to each store instance, as
 * the round-robin cursor does.
 */
import {
  admitTenantLimit,
  compareTenantLimits,
  pickForTenants,
  TenantBudget,
  tenantLimitStatus,
  type TenantLimit,
  type TenantLimitStatus,
  type WeightedTurns,
} from '../../core/tenant-limits.ts';
import { laneTokenDue, type LaneBudget, type TokenBucket } from '../../core/kind-limits.ts';
import type { JobRecord, Micros } from '../../core/types.ts';
import { scopeOfTenant } from '../../codec/keys.ts';
import type { Db, StoreContext } from './connection.ts';
import { bucketOfRow, rateOfRow } from './sql/controls.ts';

/** A row of `tenant_limits`: the limit, and its token bucket (`tokens` NULL: full). */
interface TenantLimitRow {
  readonly tenant: string;
  readonly concurrency: number | null;
  readonly rate_count: string | null;
  readonly rate_period_ms: string | null;
  readonly weight: number;
  readonly set_at: string;
  readonly set_by: string;
  readonly tokens: number | null;
  readonly refilled_at: string | null;
}

const COLUMNS = 'tenant, concurrency, rate_count, rate_period_ms, weight, set_at, set_by, tokens, refilled_at';

function limitOfRow(row: TenantLimitRow): TenantLimit {
  return {
    tenant: row.tenant,
    concurrency: row.concurrency,
    rate: rateOfRow(row),
    weight: row.weight,
    setAt: Number(row.set_at),
    by: row.set_by,
  };
}

/** The store's tenant limits. */
export class TenantLimits {
  private readonly t: string;

  constructor(private readonly ctx: StoreContext) {
    this.t = ctx.t;
  }

  /** Upserted under the table's EXCLUSIVE lock, so two at once cannot both take the last place. */
  async set(limit: TenantLimit, maxTotal: number): Promise<TenantLimit> {
    return this.ctx.txAgain(async (db) => {
      const { rows } = await db.query<TenantLimitRow>(`SELECT ${COLUMNS} FROM ${this.t}.tenant_limits`);
      admitTenantLimit(rows.map(limitOfRow), limit, maxTotal);
      await db.query(
        `INSERT INTO ${this.t}.tenant_limits
           (tenant, scope, concurrency, rate_count, rate_period_ms, weight, set_at, set_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (tenant) DO UPDATE SET concurrency = EXCLUDED.concurrency,
           rate_count = EXCLUDED.rate_count, rate_period_ms = EXCLUDED.rate_period_ms,
           weight = EXCLUDED.weight, set_at = EXCLUDED.set_at, set_by = EXCLUDED.set_by,
           tokens = CASE WHEN EXCLUDED.rate_count IS NULL THEN NULL ELSE tenant_limits.tokens END,
           refilled_at = CASE WHEN EXCLUDED.rate_count IS NULL THEN NULL ELSE tenant_limits.refilled_at END`,
        [
          limit.tenant,
          scopeOfTenant(limit.tenant),
          limit.concurrency,
          limit.rate?.count ?? null,
          limit.rate?.periodMs ?? null,
          limit.weight,
          limit.setAt,
          limit.by,
        ],
      );
      return limit;
    }, this.begin);
  }

  async clear(tenant: string): Promise<boolean> {
    return this.ctx.txAgain(async (db) => {
      const { rowCount } = await db.query(`DELETE FROM ${this.t}.tenant_limits WHERE tenant = $1`, [tenant]);
      return (rowCount ?? 0) > 0;
    }, this.begin);
  }

  async list(now: Micros): Promise<TenantLimitStatus[]> {
    const { rows } = await this.ctx.query<TenantLimitRow & { leased: string }>(
      `SELECT ${COLUMNS}, (SELECT count(*) FROM ${this.t}.jobs j WHERE j.scope = tl.scope AND j.state = 1) AS leased
       FROM ${this.t}.tenant_limits tl`,
      [],
    );
    return rows
      .map((row) => tenantLimitStatus(limitOfRow(row), Number(row.leased), bucketOfRow(row), now))
      .sort(compareTenantLimits);
  }

  private get begin(): string {
    return `BEGIN; LOCK TABLE ${this.t}.tenant_limits IN EXCLUSIVE MODE`;
  }
}

/**
 * The next token of a rate-limited tenant, not full, with ready work (in `scope`, when given),
 * for `nextGateAt`: `null` when none waits for one.
 */
export async function tenantTokenDue(ctx: StoreContext, scope: Buffer | null, now: Micros): Promise<Micros | null> {
  const { rows } = await ctx.query<TenantLimitRow & { leased: string }>(
    `SELECT ${COLUMNS}, (SELECT count(*) FROM ${ctx.t}.jobs j WHERE j.scope = tl.scope AND j.state = 1) AS leased
     FROM ${ctx.t}.tenant_limits tl WHERE rate_count IS NOT NULL AND ($2::bytea IS NULL OR tl.scope = $2::bytea)
       AND EXISTS (SELECT 1 FROM ${ctx.t}.jobs j WHERE j.scope = tl.scope AND j.state = 0 AND NOT j.held
         AND (j.not_before IS NULL OR j.not_before <= $1))`,
    [now, scope],
  );
  let earliest: Micros | null = null;
  for (const row of rows) {
    const at = laneTokenDue(limitOfRow(row), Number(row.leased), bucketOfRow(row), now);
    if (at !== null && (earliest === null || at < earliest)) earliest = at;
  }
  return earliest;
}

/** A candidate of the claim: the record and its scope (hex, which orders as the bytes do). */
export interface TenantClaimCandidate {
  readonly record: JobRecord;
  readonly scope: string;
}

/**
 * The claim's choice while tenant limits exist, inside the claim's transaction: the rows of
 * `tenant_limits` locked, the limited tenants' leases counted (a statement after the lock, so it
 * sees every lease committed before), `pickForTenants` over `candidates` (in key order), and the
 * buckets spent.
 */
export async function pickWithTenantLimits(
  db: Db,
  t: string,
  candidates: readonly TenantClaimCandidate[],
  params: { readonly limit: number; readonly now: Micros; readonly fair: boolean },
  lanes: LaneBudget,
  turns: WeightedTurns,
): Promise<JobRecord[]> {
  const { rows } = await db.query<TenantLimitRow & { scope: Buffer }>(
    `SELECT ${COLUMNS}, scope FROM ${t}.tenant_limits ORDER BY tenant FOR UPDATE`,
  );
  const counted = rows.filter((row) => row.concurrency !== null).map((row) => row.scope);
  const { rows: counts } =
    counted.length === 0
      ? { rows: [] }
      : await db.query<{ scope: Buffer; n: string }>(
          `SELECT scope, count(*) AS n FROM ${t}.jobs WHERE state = 1 AND scope = ANY($1::bytea[]) GROUP BY scope`,
          [counted],
        );
  const leased = new Map(counts.map((row) => [row.scope.toString('hex'), Number(row.n)]));
  const scopes = new Map(rows.map((row) => [row.tenant, row.scope.toString('hex')]));
  const buckets = new Map(rows.map((row) => [row.tenant, bucketOfRow(row)]));
  const bucketOf = (tenant: string): TokenBucket | null => buckets.get(tenant) ?? null;
  const tenants = new TenantBudget(
    rows.map(limitOfRow),
    (tenant) => leased.get(scopes.get(tenant) ?? '') ?? 0,
    bucketOf,
    params.now,
  );
  const chosen = pickForTenants(
    candidates.map((c) => ({ ...c, tenant: c.record.tenant, kind: c.record.kind })),
    params.limit,
    params.fair,
    lanes,
    tenants,
    turns,
  );
  const spent = tenants.spent(bucketOf, params.now);
  if (spent.size > 0) {
    await db.query(
      `UPDATE ${t}.tenant_limits AS tl SET tokens = u.tokens, refilled_at = u.refilled_at
       FROM unnest($1::text[], $2::float8[], $3::bigint[]) AS u(tenant, tokens, refilled_at)
       WHERE tl.tenant = u.tenant`,
      [[...spent.keys()], [...spent.values()].map((b) => b.tokens), [...spent.values()].map((b) => b.refilledAt)],
    );
  }
  return chosen.map((c) => c.record);
}
