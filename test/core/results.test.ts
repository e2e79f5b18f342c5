/** What a handler's return value becomes as a result, and how a result reads back. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import { progressText, resultBytes, resultJson, resultJsonText } from '../../src/core/results.ts';

const text = (bytes: Uint8Array | undefined): string | undefined =>
  bytes === undefined ? undefined : Buffer.from(bytes).toString();

function refusesNaming(field: string): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof TelhaError);
    assert.equal(error.code, ErrorCode.InvalidArgument);
    assert.equal(error.field, field);
    return true;
  };
}

describe('a handler’s return value as a result', () => {
  it('stores nothing for undefined, bytes as they are, and JSON for anything else', () => {
    const bytes = new Uint8Array([0xff, 0]);
    assert.equal(resultBytes(undefined), undefined);
    assert.equal(resultBytes(bytes), bytes);
    assert.equal(text(resultBytes({ sent: 3, to: ['é'] })), '{"sent":3,"to":["é"]}');
    assert.equal(text(resultBytes(null)), 'null');
    assert.equal(text(resultBytes('done')), '"done"');
    assert.equal(
      resultBytes(() => 1),
      undefined,
    );
  });

  it('refuses a value JSON cannot write, naming result', () => {
    assert.throws(() => resultBytes({ big: 1n }), refusesNaming('result'));
  });

  it('reads a result back as JSON, and refuses bytes that are not JSON text', () => {
    assert.deepEqual(resultJson({ result: Buffer.from('{"a":[1]}') }), { a: [1] });
    assert.equal(resultJson({ result: null }), undefined);
    assert.throws(() => resultJson({ result: new Uint8Array([0xff]) }), TypeError);
    assert.equal(resultJsonText(Buffer.from('42')), '42');
    assert.equal(resultJsonText(Buffer.from('not json')), null);
    assert.equal(resultJsonText(new Uint8Array([0xc3])), null);
  });
});

describe('a progress value', () => {
  it('is its JSON text', () => {
    assert.equal(progressText(0.5), '0.5');
    assert.equal(progressText({ done: 2, of: 3 }), '{"done":2,"of":3}');
  });

  it('refuses a value with no JSON text, naming progress', () => {
    assert.throws(() => progressText(undefined), refusesNaming('progress'));
    assert.throws(() => progressText({ n: 1n }), refusesNaming('progress'));
  });
});
