/**
 * `telha`: the operator CLI. `telha serve` runs the server; `telha jobs ...`
 * talks to one over gRPC. Exit codes: 0 success, 1 the call failed (the
 * server's error is printed), 2 bad usage.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import type { RemoteJob } from '../client/convert.ts';
import { TelhaClient, DEFAULT_ADDRESS } from '../client/client.ts';
import { isUnreachable } from '../client/errors.ts';
import { isTelhaError } from '../core/errors.ts';
import type { JobState } from '../core/types.ts';
import { JOB_STATE_NAMES, SYSTEM_SCOPE, tenantScope, type JobRecord, type QueueScope } from '../core/types.ts';
import { formatList, formatShow, formatStats } from './format.ts';
import { serve } from './serve.ts';

class UsageError extends Error {}

interface GlobalOptions {
  address: string;
  token?: string;
  tls?: boolean;
}

interface ScopeOptions {
  tenant?: string;
  system?: boolean;
}

function integer(name: string): (value: string) => number {
  return (value) => {
    if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError(`${name} must be an integer`);
    return Number(value);
  };
}

const STATES = Object.fromEntries(Object.entries(JOB_STATE_NAMES).map(([k, v]) => [v, Number(k) as JobState]));

function scopeOf(options: ScopeOptions): QueueScope | undefined {
  if (options.tenant !== undefined && options.system) throw new UsageError('--tenant and --system exclude each other');
  if (options.system) return SYSTEM_SCOPE;
  return options.tenant === undefined ? undefined : tenantScope(options.tenant);
}

/** A record for `--json`: bytes as base64 plus a UTF-8 copy when it reads as text, state by name. */
function jobJson(job: JobRecord): object {
  const text = (b: Uint8Array | null): string | null => {
    if (b === null) return null;
    const s = Buffer.from(b).toString('utf8');
    return s.includes('\uFFFD') ? null : s;
  };
  return {
    ...job,
    state: JOB_STATE_NAMES[job.state],
    payload: Buffer.from(job.payload).toString('base64'),
    payloadText: text(job.payload),
    continuation: job.continuation === null ? null : Buffer.from(job.continuation).toString('base64'),
  };
}

function print(value: unknown): void {
  process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);
}

function readPayload(spec: string | undefined): Uint8Array | undefined {
  if (spec === undefined) return undefined;
  if (spec.startsWith('@')) {
    try {
      return readFileSync(spec.slice(1));
    } catch (error) {
      throw new UsageError(`cannot read payload file ${spec.slice(1)}: ${(error as Error).message}`);
    }
  }
  try {
    JSON.parse(spec);
  } catch {
    throw new UsageError('--payload must be JSON (or @file for raw bytes)');
  }
  return Buffer.from(spec, 'utf8');
}

export function buildProgram(): Command {
  const program = new Command('telha')
    .description('Telha: a durable job queue with leases and fencing tokens')
    .addOption(new Option('--address <host:port>', 'server address').env('TELHA_ADDRESS').default(DEFAULT_ADDRESS))
    .addOption(new Option('--token <token>', 'bearer token').env('TELHA_TOKEN'))
    .option('--tls', 'connect with TLS')
    .showHelpAfterError()
    .exitOverride();

  const client = (): TelhaClient => {
    const g = program.opts<GlobalOptions>();
    return new TelhaClient({
      address: g.address,
      ...(g.token ? { token: g.token } : {}),
      ...(g.tls ? { tls: true } : {}),
    });
  };

  program
    .command('serve')
    .description('run the server on the embedded store (defaults: ./telha-data, 127.0.0.1:7070)')
    .option('--config <file>', 'TOML config file (or TELHA_CONFIG)')
    .option('--listen <host:port>', 'address to serve on (server.address)')
    .option('--data <dir>', 'store directory (storage.path)')
    .action(async (o: { config?: string; listen?: string; data?: string }) => {
      await serve({
        ...(o.config ? { config: o.config } : {}),
        ...(o.listen ? { address: o.listen } : {}),
        ...(o.data ? { data: o.data } : {}),
      });
    });

  const jobs = program.command('jobs').description('inspect and manage jobs on a running server');

  jobs
    .command('show')
    .description("print a job's whole lifecycle from its events")
    .argument('<id>', 'job id')
    .option('--json', 'print the record as JSON')
    .action(async (id: string, o: { json?: boolean }) => {
      const job = await client().show(id);
      print(o.json ? jobJson(job) : formatShow(job));
    });

  jobs
    .command('list')
    .description('list jobs in key order (priority, then age)')
    .addOption(new Option('--state <state>', 'only this state').choices(Object.keys(STATES)))
    .option('--kind-prefix <prefix>', 'only kinds starting with this')
    .option('--tenant <tenant>', "one tenant's jobs (operators)")
    .option('--system', 'system-scope jobs (operators)')
    .option('--limit <n>', 'page size (1-1000)', integer('--limit'), 50)
    .option('--page-token <token>', 'continue from a previous page')
    .option('--all', 'follow every page')
    .option('--json', 'print JSON')
    .action(
      async (
        o: ScopeOptions & {
          state?: string;
          kindPrefix?: string;
          limit: number;
          pageToken?: string;
          all?: boolean;
          json?: boolean;
        },
      ) => {
        const c = client();
        const scope = scopeOf(o);
        const all: RemoteJob[] = [];
        let token = o.pageToken;
        let next: string | null = null;
        do {
          const page = await c.list({
            ...(scope ? { scope } : {}),
            ...(o.state ? { state: STATES[o.state] as JobState } : {}),
            ...(o.kindPrefix ? { kindPrefix: o.kindPrefix } : {}),
            limit: o.limit,
            ...(token ? { pageToken: token } : {}),
          });
          all.push(...page.jobs);
          next = page.nextPageToken;
          token = next ?? undefined;
        } while (o.all && next !== null);
        if (o.json) print({ jobs: all.map(jobJson), nextPageToken: next });
        else {
          print(formatList(all));
          if (next !== null) process.stderr.write(`more: --page-token ${next}\n`);
        }
      },
    );

  jobs
    .command('retry')
    .description('move a dead job back to pending with its attempts reset (operators)')
    .argument('<id>', 'job id')
    .option('--json', 'print the record as JSON')
    .action(async (id: string, o: { json?: boolean }) => {
      const job = await client().retry(id);
      print(o.json ? jobJson(job) : `retried ${job.jobId}: ${JOB_STATE_NAMES[job.state]}, attempts ${job.attempts}`);
    });

  jobs
    .command('enqueue')
    .description('enqueue a job')
    .requiredOption('--kind <kind>', 'job kind')
    .option('--payload <json|@file>', 'payload: JSON text, or @path for raw bytes from a file')
    .option('--tenant <tenant>', 'tenant scope (operators)')
    .option('--system', 'system scope (operators; kind must start with system:)')
    .option('--priority <n>', '0-255, lower is sooner', integer('--priority'))
    .option('--delay-ms <n>', 'not leased before this many ms from now', integer('--delay-ms'))
    .option('--max-attempts <n>', "this job's attempt ceiling", integer('--max-attempts'))
    .option('--idempotency-key <key>', 'a repeat returns the first job')
    .option('--json', 'print the record as JSON')
    .action(
      async (
        o: ScopeOptions & {
          kind: string;
          payload?: string;
          priority?: number;
          delayMs?: number;
          maxAttempts?: number;
          idempotencyKey?: string;
          json?: boolean;
        },
      ) => {
        const payload = readPayload(o.payload);
        const scope = scopeOf(o);
        const result = await client().enqueue(
          {
            kind: o.kind,
            ...(payload ? { payload } : {}),
            ...(o.priority === undefined ? {} : { priority: o.priority }),
            ...(o.delayMs === undefined ? {} : { delayMs: o.delayMs }),
            ...(o.maxAttempts === undefined ? {} : { maxAttempts: o.maxAttempts }),
            ...(o.idempotencyKey === undefined ? {} : { idempotencyKey: o.idempotencyKey }),
          },
          scope,
        );
        if (o.json) print({ created: result.created, job: jobJson(result.job) });
        else print(`${result.created ? 'enqueued' : 'already enqueued (idempotency key)'} ${result.job.jobId}`);
      },
    );

  jobs
    .command('counts')
    .alias('stats')
    .description('jobs per state and kind')
    .option('--tenant <tenant>', "one tenant's jobs (operators)")
    .option('--system', 'system-scope jobs (operators)')
    .option('--json', 'print JSON')
    .action(async (o: ScopeOptions & { json?: boolean }) => {
      const rows = await client().counts(scopeOf(o));
      print(
        o.json
          ? rows.map((r) => ({ state: JOB_STATE_NAMES[r.state], kind: r.kind, count: r.count }))
          : formatStats(rows),
      );
    });

  return program;
}

export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here too, with exit code 0.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`error: ${error.message}\n`);
      return 2;
    }
    if (isUnreachable(error)) {
      const { address } = program.opts<GlobalOptions>();
      process.stderr.write(
        `error: ${error.code}: cannot reach a Telha server at ${address}: start one with \`telha serve\` (or \`npm start\`), or point TELHA_ADDRESS / --address at one\n  (${error.message})\n`,
      );
      return 1;
    }
    if (isTelhaError(error)) {
      process.stderr.write(`error: ${error.code}: ${error.message}\n`);
      return 1;
    }
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
