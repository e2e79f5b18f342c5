/** `telha jobs counts`: jobs per state and kind. */
import { JOB_STATE_NAMES } from '../../core/types.ts';
import { scopeOf, type ScopeOptions } from '../args.ts';
import { formatStats } from '../format.ts';
import { printLine, type CliIo, type OperatorClient } from '../io.ts';

export interface CountsOptions extends ScopeOptions {
  readonly json?: boolean;
}

export async function countJobs(options: CountsOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const rows = await client.counts(scopeOf(options));
  printLine(
    io.stdout,
    options.json
      ? rows.map((r) => ({ state: JOB_STATE_NAMES[r.state], kind: r.kind, count: r.count }))
      : formatStats(rows),
  );
  return 0;
}
