/** The plans of PostgreSQL statements, for tests that check what a claim reads rather than how fast. */
import pg from 'pg';
import { TEST_PG_URL } from './postgres-url.ts';

interface PlanNode {
  readonly 'Node Type': string;
  readonly 'Relation Name'?: string;
  readonly 'Index Name'?: string;
  readonly 'Actual Rows': number;
  readonly 'Actual Loops'?: number;
  readonly 'Rows Removed by Filter'?: number;
  readonly Plans?: readonly PlanNode[];
}
interface PlanRoot {
  readonly Plan: PlanNode;
}

function planNodes(node: PlanNode | undefined): PlanNode[] {
  if (node === undefined) return [];
  return [node, ...(node.Plans ?? []).flatMap((child) => planNodes(child))];
}

/**
 * The scans of the jobs table in a statement's executed plan (run in a transaction rolled back,
 * after ANALYZE): for each, the index, the rows it found, and the rows it read and dropped by a
 * filter, summed over its loops.
 */
export async function jobScans(
  table: string,
  query: { readonly text: string; readonly values: readonly unknown[] },
): Promise<[string | undefined, number, number][]> {
  const db = new pg.Client({ connectionString: TEST_PG_URL });
  await db.connect();
  try {
    await db.query(`ANALYZE ${table}.jobs`);
    await db.query('BEGIN');
    const { rows } = await db.query<{ 'QUERY PLAN': PlanRoot[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${query.text}`, [
      ...query.values,
    ]);
    await db.query('ROLLBACK');
    return planNodes(rows[0]?.['QUERY PLAN'][0]?.Plan)
      .filter((n) => n['Relation Name'] === 'jobs')
      .map((n) => {
        const loops = n['Actual Loops'] ?? 1;
        return [n['Index Name'], n['Actual Rows'] * loops, (n['Rows Removed by Filter'] ?? 0) * loops];
      });
  } finally {
    await db.end();
  }
}
