/**
 * `JobStore.storedKeys` and `importKeys` on PostgreSQL: a line is the rows whose `order_key`
 * names it, by `order_seq`; a holder is the row whose `supersede_key` names its key
 * (`ordered-keys.ts`, `supersede.ts`). An import takes the same advisory locks as the writes that
 * change lines and holders, so it runs between them.
 */
import type pg from 'pg';
import { supersedeSlot } from '../../core/supersede.ts';
import type { JobRecord } from '../../core/types.ts';
import { scopeOfTenant } from '../../codec/keys.ts';
import { decodeRecord } from '../../codec/value.ts';
import { planKeysImport } from '../stored-keys.ts';
import type { KeysImportOutcome, StoredKeys, StoredLine } from '../types.ts';
import { joinLines, lockLines } from './ordered-keys.ts';
import { lockSupersedeKeys } from './supersede.ts';

type Db = Pick<pg.ClientBase, 'query'>;

export async function storedKeys(db: Db, table: string): Promise<StoredKeys> {
  const ordered = await db.query<{ tenant: string | null; key: string; job_id: string }>(
    `SELECT tenant, order_key AS key, job_id FROM ${table}.jobs WHERE order_key IS NOT NULL
       ORDER BY scope, order_key, order_seq`,
  );
  const lines: { tenant: string | null; key: string; ids: string[] }[] = [];
  for (const row of ordered.rows) {
    const last = lines.at(-1);
    if (last !== undefined && last.tenant === row.tenant && last.key === row.key) last.ids.push(row.job_id);
    else lines.push({ tenant: row.tenant, key: row.key, ids: [row.job_id] });
  }
  const held = await db.query<{ tenant: string | null; key: string; job_id: string }>(
    `SELECT tenant, supersede_key AS key, job_id FROM ${table}.jobs WHERE supersede_key IS NOT NULL`,
  );
  return { lines, holders: held.rows.map((row) => ({ tenant: row.tenant, key: row.key, jobId: row.job_id })) };
}

/** Inside a transaction: lock the keys, read what the plan needs, and write its lines and holders. */
export async function importKeys(db: Db, table: string, keys: StoredKeys): Promise<KeysImportOutcome> {
  await lockLines(
    db,
    keys.lines.map((line: StoredLine) => ({ tenant: line.tenant, key: line.key })),
  );
  const scopes = keys.holders.map((h) => scopeOfTenant(h.tenant));
  const supersedeKeys = keys.holders.map((h) => h.key);
  await lockSupersedeKeys(db, scopes, supersedeKeys);
  const ids = [...keys.lines.flatMap((line) => line.ids), ...keys.holders.map((h) => h.jobId)];
  const found = await db.query<{ job_id: string; record: Buffer; in_line: boolean }>(
    `SELECT job_id, record, order_key IS NOT NULL AS in_line FROM ${table}.jobs WHERE job_id = ANY($1::uuid[])`,
    [ids],
  );
  const records = new Map<string, { record: JobRecord; inLine: boolean }>();
  for (const row of found.rows) {
    records.set(row.job_id, { record: decodeRecord(row.record, `job ${row.job_id}`), inLine: row.in_line });
  }
  const taken = await db.query<{ tenant: string | null; key: string }>(
    `SELECT j.tenant, j.supersede_key AS key FROM ${table}.jobs j
       JOIN unnest($1::bytea[], $2::text[]) AS k(scope, key) ON j.scope = k.scope AND j.supersede_key = k.key`,
    [scopes, supersedeKeys],
  );
  const heldSlots = new Set(taken.rows.map((row) => supersedeSlot(row.tenant, row.key)));
  const plan = planKeysImport(keys, {
    load: (id) => records.get(id)?.record ?? null,
    inLine: (id) => records.get(id)?.inLine === true,
    keyHeld: (tenant, key) => heldSlots.has(supersedeSlot(tenant, key)),
  });
  const joining = plan.lines.flat();
  await joinLines(db, table, joining, new Set(joining.map((r) => r.jobId)));
  if (plan.holders.length > 0) {
    await db.query(
      `UPDATE ${table}.jobs j SET supersede_key = u.key FROM unnest($1::uuid[], $2::text[]) AS u(job_id, key)
         WHERE j.job_id = u.job_id`,
      [plan.holders.map((r) => r.jobId), plan.holders.map((r) => r.supersedeKey)],
    );
  }
  return plan.outcome;
}
