/** `telha jobs enqueue`: one job, from the command line. */
import { readPayload, requiredScope, scopeOf, type ScopeOptions } from '../args.ts';
import { jobJson } from '../format.ts';
import { printLine, UsageError, type CliIo, type OperatorClient } from '../io.ts';
import type { SupersedeMode } from '../../core/types.ts';

export interface EnqueueOptions extends ScopeOptions {
  readonly kind: string;
  /** JSON text, or `@path` for a file's raw bytes. */
  readonly payload?: string;
  readonly priority?: number;
  readonly delayMs?: number;
  readonly maxAttempts?: number;
  readonly timeoutSecs?: number;
  readonly idempotencyKey?: string;
  readonly supersedeKey?: string;
  /** `pending` or `leased`; the server refuses anything else, naming `supersede`. */
  readonly supersede?: string;
  readonly debounceMs?: number;
  readonly debounceMaxMs?: number;
  readonly json?: boolean;
  /**
   * Whether the call carries a token. Without one the caller is an operator
   * (a server with no tokens) or no one, and an operator's job must name its
   * scope; a tenant's token names its own.
   */
  readonly withToken: boolean;
}

/** Prints the job's id alone on stdout, so `id=$(telha jobs enqueue ...)` captures it. */
export async function enqueueJob(options: EnqueueOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const scope = options.withToken ? scopeOf(options) : requiredScope(options, 'jobs enqueue');
  const payload = readPayload(options.payload);
  const result = await client.enqueue(
    {
      kind: options.kind,
      ...(payload ? { payload } : {}),
      ...(options.priority === undefined ? {} : { priority: options.priority }),
      ...(options.delayMs === undefined ? {} : { delayMs: options.delayMs }),
      ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
      ...(options.timeoutSecs === undefined ? {} : { timeoutSecs: options.timeoutSecs }),
      ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
      ...(options.supersedeKey === undefined ? {} : { supersedeKey: options.supersedeKey }),
      ...(options.supersede === undefined ? {} : { supersede: supersedeMode(options.supersede) }),
      ...(options.debounceMs === undefined ? {} : { debounceMs: options.debounceMs }),
      ...(options.debounceMaxMs === undefined ? {} : { debounceMaxMs: options.debounceMaxMs }),
    },
    scope,
  );
  if (options.json) {
    printLine(io.stdout, { created: result.created, job: jobJson(result.job) });
    return 0;
  }
  printLine(io.stdout, result.job.jobId);
  if (!result.created)
    printLine(io.stderr, 'already enqueued: a job with this idempotency key exists, and that is its id');
  return 0;
}

/** `--supersede` as the SDK's mode; a word it does not know is refused here, naming the flag. */
function supersedeMode(value: string): SupersedeMode {
  if (value === 'pending' || value === 'leased') return value;
  throw new UsageError(`--supersede must be pending or leased (got "${value}")`);
}
