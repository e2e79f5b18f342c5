/** `telha serve` on an address it cannot take says which, and why, instead of grpc-js's raw error. */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { makeConfig } from '../../src/core/config.ts';
import { ErrorCode, isTelhaError } from '../../src/core/errors.ts';
import { silentLogger } from '../../src/core/logger.ts';
import type { Queue } from '../../src/engine/queue.ts';
import { openQueue } from '../../src/open.ts';
import { startServer } from '../../src/serve/server.ts';

describe('listening', () => {
  let queue: Queue;
  let taken: Server;
  let port: number;

  before(async () => {
    queue = await openQueue({ config: makeConfig(), services: false, inMemory: true });
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    port = (taken.address() as { port: number }).port;
  });
  after(async () => {
    await new Promise((resolve) => taken.close(resolve));
    await queue.close();
  });

  it('refuses a port in use, naming the address', async () => {
    const config = makeConfig({ server: { address: `127.0.0.1:${port}`, http_address: '' } });
    await assert.rejects(startServer({ queue, config, logger: silentLogger }), (error: unknown) => {
      assert.ok(isTelhaError(error, ErrorCode.FailedPrecondition), String(error));
      assert.equal(error.message, `cannot listen on 127.0.0.1:${port}: the port is in use (another telha serve?)`);
      return true;
    });
  });
});
