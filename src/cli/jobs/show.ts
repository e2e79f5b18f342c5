/** `telha jobs show <id>`: one job's whole lifecycle, event by event. */
import { formatShow, jobJson } from '../format.ts';
import { printLine, type CliIo, type OperatorClient } from '../io.ts';

export interface ShowOptions {
  readonly id: string;
  readonly json?: boolean;
}

export async function showJob(options: ShowOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const job = await client.show(options.id);
  printLine(io.stdout, options.json ? jobJson(job) : formatShow(job, io.clock.now()));
  return 0;
}
