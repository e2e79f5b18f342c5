/**
 * The write statements' array parameters in PostgreSQL's binary format (`binary-arrays.ts`):
 * each array, sent as a parameter of its declared type, reads back in PostgreSQL as the values
 * it was built from, NULLs, bounds and multi-byte text included; values the format cannot carry
 * are refused before anything is sent.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { byteaArray, int2Array, int8Array, textArray, uuidArray } from '../../src/storage/postgres/binary-arrays.ts';
import { TEST_PG_URL } from '../support/backends.ts';

describe('binary array parameters', () => {
  const db = new pg.Client({ connectionString: TEST_PG_URL });
  before(() => db.connect());
  after(() => db.end());

  /** The array as PostgreSQL reads it, each element as text (NULL as null), in order. */
  async function elements(sqlType: string, parameter: Buffer): Promise<(string | null)[]> {
    const { rows } = await db.query<{ v: string | null }>(
      `SELECT e::text AS v FROM unnest($1::${sqlType}[]) WITH ORDINALITY AS u(e, i) ORDER BY i`,
      [parameter],
    );
    return rows.map((row) => row.v);
  }

  it('bytea: bytes, empty and NULL elements', async () => {
    const values = [Buffer.from([0, 1, 0xff, 0x5c, 0x27]), Buffer.alloc(0), null, Buffer.from('{"a":"b,c"}')];
    assert.deepEqual(await elements('bytea', byteaArray(values)), [
      '\\x0001ff5c27',
      '\\x',
      null,
      `\\x${Buffer.from('{"a":"b,c"}').toString('hex')}`,
    ]);
  });

  it('text: quotes, commas, braces, backslashes, multi-byte characters, empty and NULL', async () => {
    const values = ['a"b', 'x,y', '{z}', 'back\\slash', 'façade 漢字 🚀', '', null, 'NULL'];
    assert.deepEqual(await elements('text', textArray(values)), values);
  });

  it('bigint: the safe integer range, negatives, zero and NULL', async () => {
    const values = [0, 1, -1, 2 ** 32, -(2 ** 32), 2 ** 32 - 1, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, null];
    assert.deepEqual(
      await elements('bigint', int8Array(values)),
      values.map((v) => (v === null ? null : String(v))),
    );
  });

  it('smallint: its whole range', async () => {
    const values = [0, 7, -1, 32_767, -32_768];
    assert.deepEqual(await elements('smallint', int2Array(values)), values.map(String));
  });

  it('uuid: lower and upper case text, in order', async () => {
    const values = [
      '00000000-0000-0000-0000-000000000000',
      '0192F3A4-B5C6-7D8E-9F01-23456789ABCD',
      'ffffffff-ffff-ffff-ffff-ffffffffffff',
      ...Array.from({ length: 200 }, () => randomUUID()),
    ];
    assert.deepEqual(
      await elements('uuid', uuidArray(values)),
      values.map((v) => v.toLowerCase()),
    );
  });

  it('an empty array of each type', async () => {
    assert.deepEqual(await elements('bytea', byteaArray([])), []);
    assert.deepEqual(await elements('text', textArray([])), []);
    assert.deepEqual(await elements('bigint', int8Array([])), []);
    assert.deepEqual(await elements('smallint', int2Array([])), []);
    assert.deepEqual(await elements('uuid', uuidArray([])), []);
  });

  it('refuses what the type cannot carry, before sending anything', () => {
    assert.throws(() => uuidArray(['not-a-uuid']), /is not a UUID/);
    for (const notUuid of [
      '0192f3a4-b5c6-7d8e-9f01-23456789abcz',
      '0192f3a-4b5c6-7d8e-9f01-23456789abcd',
      '0192f3a4-b5c6-7d8e-9f01-23456789abc',
      '0192f3a4-b5c6-7d8e-9f01-23456789abcdd',
      '0192f3a4b5c67d8e9f0123456789abcd',
      '0192f3a4-b5c6-7d8e-9f01-23456789abcé',
      '',
    ]) {
      assert.throws(() => uuidArray([notUuid]), /is not a UUID/, notUuid);
    }
    assert.throws(() => int8Array([2 ** 53]), /not a safe integer/);
    assert.throws(() => int8Array([1.5]), /not a safe integer/);
    assert.throws(() => int2Array([32_768]), /not a smallint/);
    assert.throws(() => int2Array([-32_769]), /not a smallint/);
  });

  it('an array sent as another type than the statement declares is refused by PostgreSQL', async () => {
    await assert.rejects(db.query('SELECT cardinality($1::bigint[])', [textArray(['1'])]), /array element type/);
  });
});
