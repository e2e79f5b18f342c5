/** The CLI run in this process against a test server, its output captured. */
import { main } from '../../src/cli/program.ts';
import type { TestServer } from './server.ts';

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `telha --address <server> ...args`, with the server's clock and no environment. */
export async function runCli(server: TestServer, ...args: string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await main(['--address', server.address, ...args], {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: {},
    clock: server.clock,
  });
  return { code, stdout, stderr };
}
