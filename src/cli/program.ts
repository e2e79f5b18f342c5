/**
 * `telha`: the operator CLI. `telha serve` runs the server; `telha jobs ...`
 * `telha schedules ...`, `telha pause`/`resume`/`pauses` and `telha limits ...` talk to one over gRPC;
 * `telha backup` does too, or opens a store itself, as `restore`, `export` and `import` do. Exit codes: 0 success, 1 the call failed (the
 * server's error is printed), 2 bad usage: a flag's value this side or the server refused (said
 * with the flag's name), with the command's usage line. Confirmations go to stdout.
 *
 * This file only parses: each command is a function in its own file taking
 * its options, a client and the output to print to, so tests run them in
 * their own process against a live server.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { TelhaClient, DEFAULT_ADDRESS } from '../client/client.ts';
import { isUnreachable, PLAINTEXT_SERVER } from '../client/errors.ts';
import { ErrorCode, isTelhaError } from '../core/errors.ts';
import { MAX_LIST_LIMIT } from '../core/bounds.ts';
import { integerIn, LISTED_STATES, wireInteger, type ScopeOptions } from './args.ts';
import type * as StoreCommandsModule from './store.ts';
import { processIo, UsageError, type CliIo, type OperatorClient } from './io.ts';
import { cancelJobs, CANCELLABLE_STATES, type CancelOptions } from './jobs/cancel.ts';
import { countJobs } from './jobs/counts.ts';
import { enqueueJob } from './jobs/enqueue.ts';
import { listJobs } from './jobs/list.ts';
import { discardJobs, retryJobs, runJobsNow } from './jobs/retry.ts';
import { showJob } from './jobs/show.ts';
import { clearLimit, listLimits, setLimit } from './limits/limits.ts';
import { clearTenantLimit, listTenantLimits, setTenantLimit } from './tenants/limits.ts';
import { listPauses } from './pauses/list.ts';
import { listBlockedKeys, releaseKey } from './keys/keys.ts';
import { pauseKinds, resumeKinds } from './pauses/pause.ts';
import { createSchedule } from './schedules/create.ts';
import { deleteSchedule } from './schedules/delete.ts';
import { listSchedules } from './schedules/list.ts';
import { runSchedule } from './schedules/run.ts';
import { showSchedule } from './schedules/show.ts';
import { updateSchedule, type UpdateScheduleOptions } from './schedules/update.ts';

type StoreCommands = typeof StoreCommandsModule;

interface StoreOptionsFlags {
  config?: string;
  data?: string;
}

interface GlobalOptions {
  address?: string;
  token?: string;
  tls?: boolean;
}

/** The package's version, read from the package.json two folders up (from src/cli/ and from dist/cli/ alike). */
function version(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}

/**
 * The command tree. `run` receives each command's work: given a client (made
 * from the global options once a command needs one), it returns the exit code.
 */
function buildProgram(
  io: CliIo,
  run: (work: (client: () => OperatorClient, token: string | undefined) => Promise<number>) => Promise<void>,
): Command {
  const program = new Command('telha')
    .description('Telha: a durable job queue with leases and fencing tokens')
    .version(version(), '-V, --version', 'print the version')
    .addOption(new Option('--address <host:port>', `server address (env TELHA_ADDRESS; default ${DEFAULT_ADDRESS})`))
    .addOption(new Option('--token <token>', 'bearer token (env TELHA_TOKEN)'))
    .option('--tls', 'connect with TLS')
    // Settings a subcommand copies when it is created: set before any is.
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .exitOverride();

  const jobsCall = (work: (client: OperatorClient) => Promise<number>): Promise<void> =>
    run((client) => work(client()));

  program
    .command('serve')
    .description('run the server on the embedded store (defaults: ./telha-data, 127.0.0.1:7070)')
    .option('--config <file>', 'TOML config file (or TELHA_CONFIG)')
    .option('--listen <host:port>', 'address to serve on (server.address)')
    .option('--http <host:port>', "the dashboard's address, '' for none (server.http_address; default 127.0.0.1:7071)")
    .option('--data <dir>', 'store directory (storage.path)')
    .action(async (o: { config?: string; listen?: string; http?: string; data?: string }) => {
      // Loaded only here, so `telha jobs ...` never loads the engine and its stores.
      const { serve } = await import('./serve.ts');
      await run(() =>
        serve(
          {
            ...(o.config ? { config: o.config } : {}),
            ...(o.listen ? { address: o.listen } : {}),
            ...(o.http === undefined ? {} : { httpAddress: o.http }),
            ...(o.data ? { data: o.data } : {}),
          },
          io,
        ),
      );
    });

  const jobs = program.command('jobs').description('inspect and manage jobs on a running server');

  jobs
    .command('show')
    .description("print a job's whole lifecycle from its events")
    .argument('<id>', 'job id')
    .option('--json', 'print the record as JSON')
    .action((id: string, o: { json?: boolean }) => jobsCall((client) => showJob({ id, ...o }, client, io)));

  jobs
    .command('list')
    .description('list jobs newest first (system jobs only with --include-system or a system: --kind-prefix)')
    .addOption(new Option('--state <state>', 'only this state').choices(Object.keys(LISTED_STATES)))
    .option('--kind-prefix <prefix>', 'only kinds starting with this')
    .option('--tenant <tenant>', "one tenant's jobs (operators)")
    .option('--system', 'system-scope jobs (operators)')
    .option(`--limit <n>`, `page size (1-${MAX_LIST_LIMIT})`, integerIn('--limit', 1, MAX_LIST_LIMIT), 50)
    .option('--page-token <token>', 'continue from a previous page')
    .option('--all', 'follow every page')
    .option('--oldest-first', 'oldest first instead of newest first')
    .option('--include-system', 'across every scope, list system jobs (system:prune) too')
    .option('--json', 'print JSON')
    .action(
      (
        o: ScopeOptions & {
          state?: string;
          kindPrefix?: string;
          limit: number;
          pageToken?: string;
          all?: boolean;
          oldestFirst?: boolean;
          includeSystem?: boolean;
          json?: boolean;
        },
      ) =>
        jobsCall((client) => {
          const { state, ...rest } = o;
          return listJobs({ ...rest, ...(state === undefined ? {} : { state: LISTED_STATES[state] }) }, client, io);
        }),
    );

  jobs
    .command('retry')
    .description(
      'move dead jobs back to pending with their attempts reset (operators): by id, or every dead job of a scope with --dead',
    )
    .argument('[ids...]', 'job ids')
    .option('--dead', 'retry every dead job of the scope (--tenant or --system), optionally of --kind-prefix')
    .option('--kind-prefix <prefix>', 'with --dead: only kinds starting with this')
    .option('--tenant <tenant>', "with --dead: this tenant's dead jobs")
    .option('--system', "with --dead: the system scope's dead jobs")
    .option('--json', 'print what moved and what failed as JSON')
    .action((ids: string[], o: ScopeOptions & { dead?: boolean; kindPrefix?: string; json?: boolean }) =>
      jobsCall((client) => retryJobs({ ids, ...o }, client, io)),
    );

  jobs
    .command('discard')
    .description(
      'give up on dead jobs (operators, or a tenant its own): each moves to cancelled with a discarded event, kept until retention prunes it; by id, or every dead job of a scope with --dead',
    )
    .argument('[ids...]', 'job ids')
    .option('--dead', 'discard every dead job of the scope (--tenant or --system), optionally of --kind-prefix')
    .option('--kind-prefix <prefix>', 'with --dead: only kinds starting with this')
    .option('--tenant <tenant>', "with --dead: this tenant's dead jobs")
    .option('--system', "with --dead: the system scope's dead jobs")
    .option('--reason <text>', "why, kept in each job's discarded event")
    .option('--json', 'print what moved and what failed as JSON')
    .action(
      (ids: string[], o: ScopeOptions & { dead?: boolean; kindPrefix?: string; reason?: string; json?: boolean }) =>
        jobsCall((client) => discardJobs({ ids, ...o }, client, io)),
    );

  jobs
    .command('run-now')
    .description(
      'make pending jobs that wait behind a delay or a backoff ready now, keeping their attempts (operators, or a tenant its own)',
    )
    .argument('<ids...>', 'job ids')
    .option('--json', 'print what moved and what failed as JSON')
    .action((ids: string[], o: { json?: boolean }) => jobsCall((client) => runJobsNow({ ids, ...o }, client, io)));

  jobs
    .command('cancel')
    .description(
      'cancel pending or leased jobs (operators, or a tenant its own): by id, or every one of a kind prefix with --kind-prefix',
    )
    .argument('[ids...]', 'job ids')
    .option('--kind-prefix <prefix>', 'cancel every pending or leased job whose kind starts with this')
    .addOption(
      new Option('--state <state>', 'with --kind-prefix: only this state').choices(Object.keys(CANCELLABLE_STATES)),
    )
    .option('--tenant <tenant>', "with --kind-prefix: this tenant's jobs (operators; default every scope)")
    .option('--system', "with --kind-prefix: the system scope's jobs")
    .option('--reason <text>', "why, kept in each job's cancelled event (by id)")
    .option('--json', 'print what was cancelled and what failed as JSON')
    .action((ids: string[], o: Omit<CancelOptions, 'ids'>) =>
      jobsCall((client) => cancelJobs({ ids, ...o }, client, io)),
    );

  jobs
    .command('enqueue')
    .description('enqueue a job and print its id')
    .requiredOption('--kind <kind>', 'job kind')
    .option('--payload <json|@file>', 'payload: JSON text, or @path for raw bytes from a file')
    .option('--tenant <tenant>', 'tenant scope (required unless a tenant token names it)')
    .option('--system', 'system scope (kind must start with system:)')
    // The server checks each field's own range and names the field; here that the wire carries it.
    .option('--priority <n>', '0-255, lower is sooner', wireInteger('--priority', 'uint32'))
    .option('--delay-ms <n>', 'not leased before this many ms from now', wireInteger('--delay-ms', 'int64'))
    .option('--max-attempts <n>', "this job's attempt ceiling", wireInteger('--max-attempts', 'uint32'))
    .option(
      '--timeout-secs <n>',
      'the longest one attempt may run, heartbeats or not',
      wireInteger('--timeout-secs', 'uint32'),
    )
    .option('--idempotency-key <key>', 'a repeat returns the first job')
    .option('--supersede-key <key>', 'latest wins: replaces the pending job holding this key in the scope')
    .option('--supersede <mode>', 'pending (default): a leased holder runs on; leased: cancel it too, fenced')
    .option(
      '--debounce-ms <n>',
      'with --supersede-key: due this many ms after the latest enqueue of the key',
      wireInteger('--debounce-ms', 'int64'),
    )
    .option(
      '--debounce-max-ms <n>',
      'with --debounce-ms: due at most this many ms after the first enqueue of the debounce run',
      wireInteger('--debounce-max-ms', 'int64'),
    )
    .option('--order-key <key>', 'ordered key: jobs with this key in the scope run one at a time, in enqueue order')
    .option(
      '--order-on-dead <policy>',
      'with --order-key: block (default) the key while the job is dead, or release it',
    )
    .option('--json', 'print the record as JSON')
    .action(
      (
        o: ScopeOptions & {
          kind: string;
          payload?: string;
          priority?: number;
          delayMs?: number;
          maxAttempts?: number;
          timeoutSecs?: number;
          idempotencyKey?: string;
          supersedeKey?: string;
          supersede?: string;
          debounceMs?: number;
          debounceMaxMs?: number;
          orderKey?: string;
          orderOnDead?: string;
          json?: boolean;
        },
      ) => run((client, token) => enqueueJob({ ...o, withToken: token !== undefined }, client(), io)),
    );

  jobs
    .command('counts')
    .alias('stats')
    .description('jobs per state and kind')
    .option('--tenant <tenant>', "one tenant's jobs (operators)")
    .option('--system', 'system-scope jobs (operators)')
    .option('--json', 'print JSON')
    .action((o: ScopeOptions & { json?: boolean }) => jobsCall((client) => countJobs(o, client, io)));

  const schedules = program
    .command('schedules')
    .description('manage schedules: jobs enqueued at each due time of a cron expression or an interval');
  type Named = ScopeOptions & { json?: boolean };
  const scopeFlags = (command: Command): Command =>
    command
      .option('--tenant <tenant>', 'tenant scope (required unless a tenant token names it)')
      .option('--system', 'system scope (job kinds must start with system:)');
  const templateFlags = (command: Command): Command =>
    command
      .option('--payload <json|@file>', "the job's payload: JSON text, or @path for raw bytes from a file")
      .option('--priority <n>', '0-255, lower is sooner', wireInteger('--priority', 'uint32'))
      .option('--max-attempts <n>', "the job's attempt ceiling", wireInteger('--max-attempts', 'uint32'))
      .option('--timeout-secs <n>', 'the longest one attempt may run', wireInteger('--timeout-secs', 'uint32'));
  const timingFlags = (command: Command): Command =>
    command
      .option('--cron <expression>', 'cron expression, e.g. "0 2 * * *" (5 fields, or 6 with seconds first)')
      .option('--timezone <zone>', 'IANA time zone the cron expression is read in (default UTC)')
      .option(
        '--every <secs>',
        'fire every this many seconds instead of a cron expression',
        wireInteger('--every', 'uint32'),
      );

  templateFlags(
    timingFlags(
      scopeFlags(
        schedules
          .command('create')
          .description('create a schedule and print it')
          .argument('<name>', 'schedule name, unique in its scope')
          .requiredOption('--kind <kind>', 'kind of the job to enqueue'),
      ),
    ),
  )
    .option('--paused', 'create it paused')
    .option('--json', 'print JSON')
    .action((name: string, o: Omit<UpdateScheduleOptions, 'name' | 'withToken'> & { kind: string }) =>
      run((client, token) => createSchedule({ ...o, name, withToken: token !== undefined }, client(), io)),
    );

  scopeFlags(schedules.command('list').description('list schedules by scope, then name'))
    .option(`--limit <n>`, `page size (1-${MAX_LIST_LIMIT})`, integerIn('--limit', 1, MAX_LIST_LIMIT), 50)
    .option('--page-token <token>', 'continue from a previous page')
    .option('--all', 'follow every page')
    .option('--json', 'print JSON')
    .action((o: ScopeOptions & { limit: number; pageToken?: string; all?: boolean; json?: boolean }) =>
      jobsCall((client) => listSchedules(o, client, io)),
    );

  scopeFlags(schedules.command('show').description('print one schedule').argument('<name>', 'schedule name'))
    .option('--json', 'print JSON')
    .action((name: string, o: Named) =>
      run((client, token) => showSchedule({ ...o, name, withToken: token !== undefined }, client(), io)),
    );

  templateFlags(
    timingFlags(
      scopeFlags(
        schedules
          .command('update')
          .description('change a schedule: its timing, or its job (replaced whole, so --kind is needed)')
          .argument('<name>', 'schedule name')
          .option('--kind <kind>', 'kind of the job to enqueue'),
      ),
    ),
  )
    .option('--json', 'print JSON')
    .action((name: string, o: Omit<UpdateScheduleOptions, 'name' | 'withToken'>) =>
      run((client, token) => updateSchedule({ ...o, name, withToken: token !== undefined }, client(), io)),
    );

  for (const [command, paused, what] of [
    ['pause', true, 'stop a schedule firing until it is resumed'],
    ['resume', false, 'resume a paused schedule from its next due time (no catch-up for the pause)'],
  ] as const) {
    scopeFlags(schedules.command(command).description(what).argument('<name>', 'schedule name'))
      .option('--json', 'print JSON')
      .action((name: string, o: Named) =>
        run((client, token) => updateSchedule({ ...o, name, paused, withToken: token !== undefined }, client(), io)),
      );
  }

  scopeFlags(
    schedules
      .command('delete')
      .description('delete a schedule; the jobs it enqueued stay')
      .argument('<name>', 'schedule name'),
  ).action((name: string, o: Named) =>
    run((client, token) => deleteSchedule({ ...o, name, withToken: token !== undefined }, client(), io)),
  );

  scopeFlags(
    schedules
      .command('run')
      .description("enqueue a schedule's job now and print its id; its next due time stays, a pause too")
      .argument('<name>', 'schedule name'),
  )
    .option('--json', 'print JSON')
    .action((name: string, o: Named) =>
      run((client, token) => runSchedule({ ...o, name, withToken: token !== undefined }, client(), io)),
    );

  for (const [command, what, act] of [
    ['pause', "stop leasing a kind prefix's Pending jobs until it is resumed (enqueues still accepted)", pauseKinds],
    ['resume', "lease a paused kind prefix's jobs again, in their original order", resumeKinds],
  ] as const) {
    scopeFlags(program.command(command).description(what).argument('<prefix>', 'kind prefix, e.g. email:'))
      .option('--everywhere', 'every scope (operators)')
      .option('--json', 'print JSON')
      .action((kindPrefix: string, o: ScopeOptions & { everywhere?: boolean; json?: boolean }) =>
        run((client, token) => act({ ...o, kindPrefix, withToken: token !== undefined }, client(), io)),
      );
  }

  program
    .command('pauses')
    .description("list paused kind prefixes: a scope's and those everywhere, or (operators, no scope) every one")
    .option('--tenant <tenant>', "one tenant's (operators)")
    .option('--system', "the system scope's (operators)")
    .option('--json', 'print JSON')
    .action((o: ScopeOptions & { json?: boolean }) => jobsCall((client) => listPauses(o, client, io)));

  const keys = program.command('keys').description('ordered keys: list the ones a dead head blocks, and release one');
  keys
    .command('blocked')
    .description("ordered keys whose first job is dead (or pruned): a scope's, or (operators, no scope) every one")
    .option('--tenant <tenant>', "one tenant's (operators)")
    .option('--system', "the system scope's (operators)")
    .option('--limit <n>', 'at most this many (1-1000, default 100)', wireInteger('--limit', 'uint32'))
    .option('--json', 'print JSON')
    .action((o: ScopeOptions & { limit?: number; json?: boolean }) =>
      jobsCall((client) => listBlockedKeys(o, client, io)),
    );
  keys
    .command('release')
    .description('release a blocked ordered key: its dead head leaves the key (it stays dead), the next job runs')
    .argument('<key>', 'the ordered key')
    .option('--tenant <tenant>', 'tenant scope (required unless a tenant token names it)')
    .option('--system', 'the system scope')
    .option('--json', 'print JSON')
    .action((orderKey: string, o: ScopeOptions & { json?: boolean }) =>
      run((client, token) => releaseKey({ ...o, orderKey, withToken: token !== undefined }, client(), io)),
    );

  const limits = program
    .command('limits')
    .description('per-kind concurrency and rate limits, across every scope and server (operators)');
  limits
    .command('set')
    .description('limit a kind prefix: at most N leased at once and/or N leases per period; replaces its limit')
    .argument('<prefix>', 'kind prefix, e.g. email')
    .option('--concurrency <n>', 'at most this many leased at once', wireInteger('--concurrency', 'uint32'))
    .option('--rate <count/period>', 'at most this many leases per period, e.g. 100/s or 10/1m')
    .option('--json', 'print JSON')
    .action((kindPrefix: string, o: { concurrency?: number; rate?: string; json?: boolean }) =>
      jobsCall((client) => setLimit({ ...o, kindPrefix }, client, io)),
    );
  limits
    .command('clear')
    .description("remove a kind prefix's limit")
    .argument('<prefix>', 'kind prefix')
    .action((kindPrefix: string) => jobsCall((client) => clearLimit(kindPrefix, client, io)));
  limits
    .command('list')
    .description('every kind limit with its leased jobs and tokens now')
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => jobsCall((client) => listLimits(o, client, io)));

  const tenantLimit = program
    .command('tenants')
    .description('per-tenant limits and weights (operators)')
    .command('limit')
    .description("a tenant's concurrency, rate and weight in the fleet's fair order, across every server");
  tenantLimit
    .command('set')
    .description('limit a tenant and/or weigh its turns; replaces its limit')
    .argument('<tenant>', 'tenant name, e.g. acme')
    .option('--concurrency <n>', 'at most this many of its jobs leased at once', wireInteger('--concurrency', 'uint32'))
    .option('--rate <count/period>', 'at most this many of its leases per period, e.g. 100/s or 10/1m')
    .option('--weight <n>', 'its share of the fair order, 1-1000 (default 1)', wireInteger('--weight', 'uint32'))
    .option('--json', 'print JSON')
    .action((tenant: string, o: { concurrency?: number; rate?: string; weight?: number; json?: boolean }) =>
      jobsCall((client) => setTenantLimit({ ...o, tenant }, client, io)),
    );
  tenantLimit
    .command('clear')
    .description("remove a tenant's limit")
    .argument('<tenant>', 'tenant name')
    .action((tenant: string) => jobsCall((client) => clearTenantLimit(tenant, client, io)));
  tenantLimit
    .command('list')
    .description('every tenant limit with its leased jobs and tokens now')
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => jobsCall((client) => listTenantLimits(o, client, io)));

  const storeFlags = (command: Command): Command =>
    command
      .option('--config <file>', 'TOML config file naming the store (or TELHA_CONFIG)')
      .option('--data <dir>', 'the RocksDB store directory (storage.path)');
  // Loaded only when one runs, like `serve`: they open the engine and a store.
  const storeCommands = (): Promise<StoreCommands> => import('./store.ts');

  storeFlags(
    program
      .command('backup')
      .description(
        'copy the store to <dir> while it serves: through the server (the copy is written on its machine), or, with --config or --data, on a store no server has open',
      )
      .argument('<dir>', 'the backup directory; must not exist'),
  )
    .option('--json', 'print JSON')
    .action((dir: string, o: StoreOptionsFlags & { json?: boolean }) =>
      run(async (client) => (await storeCommands()).backup({ ...o, dir }, client, io)),
    );

  program
    .command('restore')
    .description('bring a RocksDB store back from a backup into an empty or new directory')
    .argument('<backup>', 'a directory telha backup wrote')
    .argument('<store-dir>', 'the store directory to create; must be empty or not exist')
    .action((backup: string, storeDir: string) =>
      run(async () => (await storeCommands()).restore({ backup, storeDir }, io)),
    );

  storeFlags(
    program
      .command('export')
      .description(
        "write every job, schedule, pause and kind limit of the config's store as newline-delimited JSON (servers stopped)",
      ),
  )
    .option('--output <file>', 'write to this file (default stdout)')
    .action((o: StoreOptionsFlags & { output?: string }) =>
      run(async () => (await storeCommands()).exportRecords(o, io)),
    );

  storeFlags(
    program
      .command('import')
      .description(
        "write an export into the config's store, checked whole first; refuses a store holding jobs unless --merge",
      )
      .argument('<file>', 'a file telha export wrote'),
  )
    .option('--merge', 'keep what the store holds and add the rest')
    .action((file: string, o: StoreOptionsFlags & { merge?: boolean }) =>
      run(async () => (await storeCommands()).importRecords({ ...o, file }, io)),
    );

  usageAfterErrors(program);
  return program;
}

/** After a usage error, each command prints its usage line and where the whole help is, not the whole help. */
function usageAfterErrors(command: Command, path = command.name()): void {
  command.showHelpAfterError(`usage: ${path} ${command.usage()}\n(\`${path} --help\` for more)`);
  for (const sub of command.commands) usageAfterErrors(sub, `${path} ${sub.name()}`);
}

/**
 * The flag that sets each request field the server may refuse by name: its refusal is a bad
 * command line, said in the command line's words.
 */
const FLAG_OF_FIELD: Readonly<Record<string, string>> = {
  kind: '--kind',
  payload: '--payload',
  priority: '--priority',
  delay_ms: '--delay-ms',
  max_attempts: '--max-attempts',
  timeout_secs: '--timeout-secs',
  idempotency_key: '--idempotency-key',
  supersede_key: '--supersede-key',
  supersede: '--supersede',
  debounce_ms: '--debounce-ms',
  debounce_max_ms: '--debounce-max-ms',
  order_key: '--order-key',
  order_on_dead: '--order-on-dead',
  cron: '--cron',
  timezone: '--timezone',
  every_secs: '--every',
  concurrency: '--concurrency',
  rate: '--rate',
  reason: '--reason',
};

/** The server's refusal of a field a flag set, as that flag's problem; `null` for any other error. */
function flagProblem(error: unknown): string | null {
  if (!isTelhaError(error, ErrorCode.InvalidArgument) || error.field === undefined) return null;
  const flag = FLAG_OF_FIELD[error.field];
  if (flag === undefined) return null;
  const prefix = `${error.field}: `;
  return `${flag} ${error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message}`;
}

/** Run the CLI on `argv` (without the node and script paths); resolves with the exit code. */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  let exitCode = 0;
  let client: TelhaClient | null = null;
  const program = buildProgram(io, async (work) => {
    const g = program.opts<GlobalOptions>();
    const token = g.token ?? io.env['TELHA_TOKEN'];
    const connect = (): TelhaClient =>
      (client ??= new TelhaClient({
        address: g.address ?? io.env['TELHA_ADDRESS'] ?? DEFAULT_ADDRESS,
        ...(token ? { token } : {}),
        ...(g.tls ? { tls: true } : {}),
      }));
    exitCode = await work(connect, token || undefined);
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here too, with exit code 0.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof UsageError) {
      io.stderr(`error: ${error.message}\n`);
      return 2;
    }
    const problem = flagProblem(error);
    if (problem !== null) {
      io.stderr(`error: ${problem}\n`);
      return 2;
    }
    if (isUnreachable(error)) {
      const address = program.opts<GlobalOptions>().address ?? io.env['TELHA_ADDRESS'] ?? DEFAULT_ADDRESS;
      if (error.message.endsWith(PLAINTEXT_SERVER)) {
        io.stderr(
          `error: ${error.code}: the server at ${address} does not speak TLS: drop --tls, or give it server.tls_cert_file and server.tls_key_file\n`,
        );
        return 1;
      }
      io.stderr(
        `error: ${error.code}: cannot reach a Telha server at ${address}: start one with \`telha serve\` (or \`npm start\`), or point TELHA_ADDRESS / --address at one\n  (${error.message})\n`,
      );
      return 1;
    }
    if (isTelhaError(error)) {
      io.stderr(`error: ${error.code}: ${error.message}\n`);
      return 1;
    }
    io.stderr(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    (client as TelhaClient | null)?.close();
  }
}
