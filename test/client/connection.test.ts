/** What a client call says when it cannot connect: in Telha's words, not grpc-js's. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { ErrorCode, isTelhaError } from '../../src/core/errors.ts';
import { freePort, startTestServer } from '../support/server.ts';

async function failure(client: TelhaClient): Promise<Error> {
  try {
    await client.enqueue({ kind: 'email.send' });
  } catch (error) {
    return error as Error;
  } finally {
    client.close();
  }
  throw new Error('the call succeeded');
}

describe('a client that cannot connect', () => {
  it('says nothing listens at the address when no server runs there', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const error = await failure(new TelhaClient({ address }));
    assert.ok(isTelhaError(error, ErrorCode.Unavailable), String(error));
    assert.equal(error.message, `cannot connect: nothing listens at ${address}`);
  });

  it('says the server does not speak TLS when TLS meets a plaintext server', async () => {
    const server = await startTestServer();
    try {
      const error = await failure(new TelhaClient({ address: server.address, tls: true }));
      assert.ok(isTelhaError(error, ErrorCode.Unavailable), String(error));
      assert.equal(
        error.message,
        'cannot connect: the server does not speak TLS: connect without TLS, or give the server a certificate',
      );
    } finally {
      await server.close();
    }
  });
});
