/**
 * Migrated PostgreSQL schemas for harnesses that each want a fresh store, reused within one test
 * process. Migrating a schema and dropping it is DDL the server writes to disk, most of the time
 * of a short case (bench/RESULTS.md, "Test suite time"); emptying one is a few row deletes. A
 * schema given back is emptied to the state its migration left it in (the rows of every table and
 * the position of every sequence, as read right after it was migrated), then given to the next
 * harness. One whose tables a test changed is dropped instead. The process drops what it pooled
 * when it is done.
 */
import pg from 'pg';
import { migrate, schemaTable } from '../../src/storage/postgres/migrations.ts';
import { TEST_PG_URL } from './postgres-url.ts';

/** A migrated schema and what its migration left in it. */
interface Migrated {
  readonly name: string;
  /** Each table, and its rows right after the migration (JSON of `json_agg`). */
  readonly tables: ReadonlyMap<string, string>;
  /** Each sequence, and the `setval` arguments that put it back where the migration left it. */
  readonly sequences: ReadonlyMap<string, { value: string; called: boolean }>;
}

const idle: Migrated[] = [];
const taken = new Map<string, Migrated>();
let admin: pg.Pool | null = null;
let schemaCount = 0;

/** A schema name no other test run or test in this run uses, e.g. `telha_tx_4242_3_118273`. */
export function uniqueSchema(prefix: string): string {
  return `telha_${prefix}_${process.pid}_${++schemaCount}_${Math.floor(Math.random() * 1e6)}`;
}

function adminPool(): pg.Pool {
  admin ??= new pg.Pool({ connectionString: TEST_PG_URL, max: 2 });
  return admin;
}

// The test runner ends a file's process once its event loop empties; this runs just before. It is
// registered as the module loads, before the runner's own handler (registered with the file's
// first test): registered later, from inside a test, it was found not to run.
let dropped = false;
process.on('beforeExit', () => {
  if (dropped || admin === null) return;
  dropped = true;
  void dropAll();
});

/** A migrated schema holding nothing but what its migration wrote, for one harness until {@link giveBack}. */
export async function takeSchema(): Promise<string> {
  const schema = idle.pop() ?? (await migrated(uniqueSchema('pool')));
  taken.set(schema.name, schema);
  return schema.name;
}

/** Empty `name` back to its migrated state for the next harness (its store closed), or drop it if a test changed its tables. */
export async function giveBack(name: string): Promise<void> {
  const schema = taken.get(name);
  if (schema === undefined) throw new Error(`schema ${name} was not taken from the pool`);
  taken.delete(name);
  const pool = adminPool();
  const s = schemaTable(name);
  const tables = await tablesOf(pool, name);
  if (tables.length !== schema.tables.size || !tables.every((table) => schema.tables.has(table))) {
    await pool.query(`DROP SCHEMA ${s} CASCADE`);
    return;
  }
  // One query string of several statements: one implicit transaction, one round trip.
  const statements = [...schema.tables].flatMap(([table, rows]) => [
    `DELETE FROM ${s}.${pg.escapeIdentifier(table)}`,
    ...(rows === '[]'
      ? []
      : [
          `INSERT INTO ${s}.${pg.escapeIdentifier(table)} SELECT * FROM json_populate_recordset(NULL::${s}.${pg.escapeIdentifier(table)}, ${pg.escapeLiteral(rows)})`,
        ]),
  ]);
  for (const [sequence, { value, called }] of schema.sequences) {
    statements.push(`SELECT setval(${pg.escapeLiteral(`${s}.${pg.escapeIdentifier(sequence)}`)}, ${value}, ${called})`);
  }
  await pool.query(statements.join(';\n'));
  idle.push(schema);
}

async function migrated(name: string): Promise<Migrated> {
  const pool = adminPool();
  await migrate(pool, name);
  const tables = new Map<string, string>();
  for (const table of await tablesOf(pool, name)) {
    const { rows } = await pool.query<{ rows: string }>(
      `SELECT coalesce(json_agg(t), '[]')::text AS rows FROM ${schemaTable(name)}.${pg.escapeIdentifier(table)} t`,
    );
    tables.set(table, rows[0]?.rows ?? '[]');
  }
  const { rows } = await pool.query<{ sequencename: string; last_value: string | null; start_value: string }>(
    'SELECT sequencename, last_value, start_value FROM pg_sequences WHERE schemaname = $1',
    [name],
  );
  const sequences = new Map(
    rows.map((row) => [
      row.sequencename,
      { value: row.last_value ?? row.start_value, called: row.last_value !== null },
    ]),
  );
  return { name, tables, sequences };
}

async function tablesOf(pool: pg.Pool, schema: string): Promise<string[]> {
  const { rows } = await pool.query<{ tablename: string }>('SELECT tablename FROM pg_tables WHERE schemaname = $1', [
    schema,
  ]);
  return rows.map((row) => row.tablename);
}

async function dropAll(): Promise<void> {
  const pool = adminPool();
  try {
    for (const { name } of [...idle.splice(0), ...taken.values()]) {
      await pool.query(`DROP SCHEMA IF EXISTS ${schemaTable(name)} CASCADE`);
    }
  } finally {
    await pool.end();
  }
}
