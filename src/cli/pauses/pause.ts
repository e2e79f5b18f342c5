/** `telha pause <prefix>` and `telha resume <prefix>`: hold back, or let go, a kind prefix's Pending jobs. */
import type { PauseScope } from '../../core/pauses.ts';
import { requiredScope, scopeOf, type ScopeOptions } from '../args.ts';
import { printLine, UsageError, type CliIo, type OperatorClient } from '../io.ts';
import { pauseJson } from './list.ts';

export interface PauseCommandOptions extends ScopeOptions {
  readonly kindPrefix: string;
  readonly everywhere?: boolean;
  /** A token was given: a tenant token's own scope is the default. */
  readonly withToken: boolean;
  readonly json?: boolean;
}

/** `--tenant`, `--system` or `--everywhere`; none with a token means the token's own scope. */
function pauseScopeOf(options: PauseCommandOptions, what: string): PauseScope | undefined {
  if (options.everywhere) {
    if (options.tenant !== undefined || options.system)
      throw new UsageError('--everywhere excludes --tenant and --system');
    return 'everywhere';
  }
  return options.withToken ? scopeOf(options) : requiredScope(options, what);
}

export async function pauseKinds(options: PauseCommandOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const pause = await client.pause(options.kindPrefix, pauseScopeOf(options, 'pause'));
  if (options.json) printLine(io.stdout, pauseJson(pause));
  else printLine(io.stdout, `paused ${pause.kindPrefix}`);
  return 0;
}

export async function resumeKinds(options: PauseCommandOptions, client: OperatorClient, io: CliIo): Promise<number> {
  await client.resume(options.kindPrefix, pauseScopeOf(options, 'resume'));
  printLine(io.stdout, `resumed ${options.kindPrefix}`);
  return 0;
}
