import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeTenantLimit, encodeTenantLimit, tenantLimitRowKey } from '../../src/codec/tenant-limits.ts';
import { CorruptRecordError } from '../../src/core/errors.ts';

describe('tenant limit codec', () => {
  it('writes the bytes stored rows hold, weight between rate and set_at, and reads them back', () => {
    const limit = {
      tenant: 'acme',
      concurrency: null,
      rate: { count: 3, periodMs: 60_000 },
      weight: 4,
      setAt: 9,
      by: 'config',
    };
    assert.equal(tenantLimitRowKey('acme').toString(), 'tenant-limit/acme');
    const bytes = encodeTenantLimit(limit);
    assert.equal(
      bytes.toString('hex'),
      '01' +
        Buffer.from(
          '{"tenant":"acme","concurrency":null,"rate":{"count":3,"period_ms":60000},"weight":4,"set_at":9,"by":"config"}',
        ).toString('hex'),
    );
    assert.deepEqual(decodeTenantLimit(bytes, 't'), limit);
  });

  it('refuses a weight missing, zero or past the bound, naming the row', () => {
    for (const weight of ['', ',"weight":0', ',"weight":1001']) {
      const json = `{"tenant":"acme","concurrency":null,"rate":null${weight},"set_at":1,"by":"x"}`;
      assert.throws(
        () => decodeTenantLimit(Buffer.concat([Buffer.from([1]), Buffer.from(json)]), 'row 7'),
        (error: unknown) => error instanceof CorruptRecordError && /row 7.*malformed tenant limit/.test(error.message),
      );
    }
  });
});
