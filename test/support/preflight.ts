/**
 * Run by `npm test` before anything else: a missing PostgreSQL, or a missing
 * Debian package the Python SDK's tests need, is one clear sentence here, not
 * dozens of failures minutes later. (Their tests are never skipped: without
 * them the run fails.)
 */
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { TEST_PG_URL } from './postgres-url.ts';
import { pythonProblem } from './python.ts';

/** `null` when `url` answers a query, else what is wrong and what to do about it. */
export async function postgresProblem(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return (
      `PostgreSQL is not reachable at ${shown(url)} (${error instanceof Error ? error.message : String(error)}): ` +
      'start it (trust auth for 127.0.0.1 and a database `test`), or set TELHA_TEST_PG_URL to one the tests may use. ' +
      'README.md, "Two commands", says what npm test needs.'
    );
  } finally {
    await client.end().catch(() => {});
  }
}

/** The URL with any password hidden. */
function shown(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const problem of [await postgresProblem(TEST_PG_URL), pythonProblem()]) {
    if (problem === null) continue;
    process.stderr.write(`npm test: ${problem}\n`);
    process.exitCode = 1;
  }
}
