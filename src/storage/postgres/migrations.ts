/**
 * Numbered schema migrations, applied at open under an advisory lock, so
 * several servers starting at once apply each migration exactly once and a
 * server starting against a migrated database changes nothing.
 */
import type pg from 'pg';

/** Each entry is one migration, applied in order; never edit one that has shipped, add the next. */
export const MIGRATIONS: readonly ((schema: string) => string)[] = [
  (s) => `
    CREATE TABLE ${s}.jobs (
      job_id          uuid     PRIMARY KEY,
      scope           bytea    NOT NULL,   -- the 32-byte scope of the RocksDB key
      tenant          text,                -- NULL for the system scope
      state           smallint NOT NULL,
      priority        smallint NOT NULL,
      created_at      bigint   NOT NULL,
      kind            text     NOT NULL,
      not_before      bigint,
      lease_deadline  bigint,
      worker_id       text,
      idempotency_key text,
      finished_at     bigint,
      record          bytea    NOT NULL    -- [VALUE_VERSION][msgpack JobRecord], the truth
    );
    -- Ready work in key order: (scope, state, priority, created_at, id).
    CREATE INDEX jobs_key ON ${s}.jobs (scope, state, priority, created_at, job_id);
    CREATE UNIQUE INDEX jobs_idempotency ON ${s}.jobs (scope, idempotency_key) WHERE idempotency_key IS NOT NULL;
    CREATE INDEX jobs_leases ON ${s}.jobs (lease_deadline, job_id) WHERE state = 1;
    CREATE INDEX jobs_gates ON ${s}.jobs (not_before) WHERE state = 0 AND not_before IS NOT NULL;
    CREATE INDEX jobs_finished ON ${s}.jobs (state, finished_at, job_id) WHERE state IN (2, 4);
    CREATE TABLE ${s}.meta (id int PRIMARY KEY, last_created_at bigint NOT NULL);
    INSERT INTO ${s}.meta VALUES (1, 0);
  `,
  // Ready work without gated rows in the way: from here on the not_before column holds a gate
  // only while it is closed; claims open due gates (set it NULL) before they scan this index.
  (s) => `
    CREATE INDEX jobs_ready ON ${s}.jobs (scope, priority, created_at, job_id) WHERE state = 0 AND not_before IS NULL;
  `,
  // Every job that passes through leaves dead row versions and dead ready-index entries at the
  // front of the ready range, which claims step over until vacuum removes them. A queue table
  // churns far faster than the defaults (vacuum at 20% dead rows, throttled) assume.
  (s) => `
    ALTER TABLE ${s}.jobs SET (
      autovacuum_vacuum_scale_factor = 0.01,
      autovacuum_vacuum_threshold = 1000,
      autovacuum_vacuum_cost_delay = 0,
      autovacuum_analyze_scale_factor = 0.02
    );
  `,
  // Cancelled jobs (state 5) are finished too: retention prunes them through the same index.
  (s) => `
    DROP INDEX ${s}.jobs_finished;
    CREATE INDEX jobs_finished ON ${s}.jobs (state, finished_at, job_id) WHERE state IN (2, 4, 5);
  `,
  // Schedules. `record` is the
  // truth, as for jobs; the other columns are what firing and listing search by. Names compare
  // by bytes (COLLATE "C"), the order every backend lists them in.
  (s) => `
    CREATE TABLE ${s}.schedules (
      scope       bytea   NOT NULL,
      name        text    COLLATE "C" NOT NULL,
      next_due_at bigint,
      paused      boolean NOT NULL,
      record      bytea   NOT NULL,
      PRIMARY KEY (scope, name)
    );
    CREATE INDEX schedules_due ON ${s}.schedules (next_due_at) WHERE NOT paused AND next_due_at IS NOT NULL;
  `,
  // Pauses: a kind prefix in a scope (NULL scope: everywhere) whose Pending jobs claims skip.
  // `record` is the truth (codec/pauses.ts); the columns are what claims match jobs with.
  // NULL scopes are one scope here, so the unique index keys on coalesce (no scope is empty).
  (s) => `
    CREATE TABLE ${s}.kind_pauses (
      scope       bytea,
      kind_prefix text  COLLATE "C" NOT NULL,
      record      bytea NOT NULL
    );
    CREATE UNIQUE INDEX kind_pauses_key ON ${s}.kind_pauses ((coalesce(scope, '\\x'::bytea)), kind_prefix);
  `,
  // Paused and limited jobs out of the ready index. `held` is true on a Pending row a pause
  // covers; `lane` is the kind limit a row's kind falls under (the longest prefix covering it):
  // both set by every write that makes a row Pending, and by pause, resume and setting or
  // clearing a limit (see `pausedSql`, `laneSql`). `jobs_ready` holds the unlimited ready rows,
  // `jobs_lanes` the limited ones lane by lane, so a claim never reads a paused row nor a row of
  // a lane without room. `jobs_held` is for resume; `jobs_lane_leases` counts a lane's leases.
  (s) => `
    ALTER TABLE ${s}.jobs ADD COLUMN held boolean NOT NULL DEFAULT false, ADD COLUMN lane text COLLATE "C";
    UPDATE ${s}.jobs j SET held = true WHERE state = 0 AND EXISTS (SELECT 1 FROM ${s}.kind_pauses kp
      WHERE (kp.scope IS NULL OR kp.scope = j.scope) AND starts_with(j.kind, kp.kind_prefix)
      AND (starts_with(kp.kind_prefix, 'system:') OR NOT starts_with(j.kind, 'system:')));
    DROP INDEX ${s}.jobs_ready;
    CREATE INDEX jobs_ready ON ${s}.jobs (scope, priority, created_at, job_id)
      WHERE state = 0 AND not_before IS NULL AND NOT held AND lane IS NULL;
    CREATE INDEX jobs_lanes ON ${s}.jobs (lane, scope, priority, created_at, job_id)
      WHERE state = 0 AND not_before IS NULL AND NOT held AND lane IS NOT NULL;
    CREATE INDEX jobs_held ON ${s}.jobs (scope, kind) WHERE state = 0 AND held;
    CREATE INDEX jobs_lane_leases ON ${s}.jobs (lane) WHERE state = 1 AND lane IS NOT NULL;
    -- Kind limits (core/kind-limits.ts), global: a lane's concurrency and rate, and its token
    -- bucket (tokens NULL: full), which claims taking from the lane hold locked and refill.
    CREATE TABLE ${s}.kind_limits (
      kind_prefix    text   COLLATE "C" PRIMARY KEY,
      concurrency    integer,
      rate_count     bigint,
      rate_period_ms bigint,
      set_at         bigint NOT NULL,
      set_by         text   NOT NULL,
      tokens         double precision,
      refilled_at    bigint
    );
  `,
  // The transitions log (core/transitions-log.ts), appended in the statement of each transition.
  // Sequence numbers are taken before commit, so they are not commit-ordered; readers go in
  // (xid, seq) order and read only rows of transactions older than every running one (`xid`
  // below the snapshot's xmin), which no later commit can precede. `store_id` names this store
  // in resume tokens; `pruned_*` is the last position pruning removed.
  (s) => `
    CREATE SEQUENCE ${s}.job_transitions_seq;
    CREATE TABLE ${s}.job_transitions (
      xid    xid8   NOT NULL DEFAULT pg_current_xact_id(),
      seq    bigint NOT NULL DEFAULT nextval('${s}.job_transitions_seq'),
      at     bigint NOT NULL,
      scope  bytea  NOT NULL,
      kind   text   NOT NULL,
      job_id uuid   NOT NULL,
      entry  bytea  NOT NULL,   -- [VALUE_VERSION][msgpack JobRecord], trimmed
      PRIMARY KEY (xid, seq)
    );
    CREATE TABLE ${s}.job_transitions_meta (
      id         int    PRIMARY KEY,
      store_id   text   NOT NULL,
      pruned_xid xid8   NOT NULL,
      pruned_seq bigint NOT NULL
    );
    INSERT INTO ${s}.job_transitions_meta VALUES (1, substr(md5(random()::text || clock_timestamp()::text), 1, 12), '0', 0);
  `,
  // Listings newest first (core/list-order.ts): by created_at across priorities, served by index
  // scans in either direction. `jobs_key` served only the old key-order listing (claims have the
  // ready indexes; counts and leased rows find their scope or state in `jobs_recent` as well), so
  // it goes and the table keeps one index more than before, not two.
  (s) => `
    DROP INDEX ${s}.jobs_key;
    CREATE INDEX jobs_recent ON ${s}.jobs (scope, state, created_at, job_id);
    CREATE INDEX jobs_recent_tenants ON ${s}.jobs (state, created_at, job_id) WHERE tenant IS NOT NULL;
  `,
  // Latest wins (core/supersede.ts): `supersede_key` is set on a job only while it holds its key
  // (Pending or Leased, the newest enqueued with it), and every write that finishes the job
  // clears it, so the unique index is exactly "one holder per (scope, key)".
  (s) => `
    ALTER TABLE ${s}.jobs ADD COLUMN supersede_key text;
    CREATE UNIQUE INDEX jobs_supersede ON ${s}.jobs (scope, supersede_key) WHERE supersede_key IS NOT NULL;
  `,
  // Ordered keys (core/ordered-keys.ts): `order_key` is set on a job only while it is in its key's
  // line, so the partial index holds only lines in use. `order_seq` is the job's place in its line,
  // given under the key's lock: the order enqueues committed in, which `created_at` (each server's
  // own sequence) is not across servers.
  (s) => `
    ALTER TABLE ${s}.jobs ADD COLUMN order_key text, ADD COLUMN order_seq bigint;
    CREATE INDEX jobs_order ON ${s}.jobs (scope, order_key, order_seq) WHERE order_key IS NOT NULL;
  `,
  // Tenant limits (core/tenant-limits.ts): a tenant's concurrency, rate and weight, and its token
  // bucket (tokens NULL: full), which claims hold locked while any exists. `scope` is the
  // tenant's scope bytes, so its leases are counted through `jobs_recent` (scope, state, ...).
  (s) => `
    CREATE TABLE ${s}.tenant_limits (
      tenant         text    COLLATE "C" PRIMARY KEY,
      scope          bytea   NOT NULL,
      concurrency    integer,
      rate_count     bigint,
      rate_period_ms bigint,
      weight         integer NOT NULL,
      set_at         bigint  NOT NULL,
      set_by         text    NOT NULL,
      tokens         double precision,
      refilled_at    bigint
    );
  `,
];

/** The quoted schema name of a store, checked to be a plain identifier. */
export function schemaTable(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`storage.schema "${schema}" is not a plain identifier`);
  return `"${schema}"`;
}

export async function migrate(pool: pg.Pool, schema: string): Promise<void> {
  const s = schemaTable(schema);
  const db = await pool.connect();
  try {
    await db.query('BEGIN');
    // One migrator at a time across every server sharing the database.
    await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`telha-migrate:${schema}`]);
    await db.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await db.query(
      `CREATE TABLE IF NOT EXISTS ${s}.migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await db.query<{ version: number }>(
      `SELECT coalesce(max(version), 0) AS version FROM ${s}.migrations`,
    );
    const applied = rows[0]?.version ?? 0;
    for (let version = applied + 1; version <= MIGRATIONS.length; version++) {
      const sql = MIGRATIONS[version - 1];
      if (sql === undefined) break;
      await db.query(sql(s));
      await db.query(`INSERT INTO ${s}.migrations (version) VALUES ($1)`, [version]);
    }
    await db.query('COMMIT');
  } catch (error) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    db.release();
  }
}
