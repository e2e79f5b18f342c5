/** The PostgreSQL the tests use: 127.0.0.1:5432, trust auth, database `test`, unless `TELHA_TEST_PG_URL` says otherwise. */
export const TEST_PG_URL = process.env['TELHA_TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
