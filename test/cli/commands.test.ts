/**
 * The CLI as an operator runs it, command by command, in this process: `main`
 * with the output collected, against a live server on a real socket. One
 * test at the end runs the built binary as a child process, as a newcomer does.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { main } from '../../src/cli/program.ts';
import type { Clock } from '../../src/core/clock.ts';
import { JobState, SYSTEM_SCOPE, tenantScope, type QueueScope } from '../../src/core/types.ts';
import type { Queue } from '../../src/engine/queue.ts';
import { freePort, liveServer, startTestServer, type TestServer } from '../support/server.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const MISSING_ID = '01890a5d-ac96-774b-bcce-b302099a8057';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `telha <args>` in this process, its output collected; the clock is the server's unless given. */
async function telha(args: readonly string[], options: { clock: Clock; env?: Record<string, string> }): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: options.env ?? {},
    clock: options.clock,
  });
  return { code, stdout, stderr };
}

/** `n` jobs of `kind` in `scope`, leased and failed permanently: Dead. */
async function deadJobs(queue: Queue, scope: QueueScope, kind: string, n: number): Promise<string[]> {
  await queue.enqueueBatch(
    Array.from({ length: n }, () => ({ kind })),
    scope,
  );
  const leased = await queue.lease({ workerId: 'w-dead', kinds: [kind], scope, limit: n });
  assert.equal(leased.length, n);
  const failed = await queue.failEach(
    leased.map((job) => ({
      jobId: job.jobId,
      fence: { workerId: 'w-dead', leaseGeneration: job.leaseGeneration },
      error: 'disk full',
      permanent: true,
    })),
  );
  assert.ok(failed.every((r) => r.ok && r.value.state === JobState.Dead));
  return leased.map((job) => job.jobId);
}

describe('the telha CLI', () => {
  const { server } = liveServer();
  let deadId: string;
  const run = (...args: string[]): Promise<Run> => telha(['--address', server.address, ...args], server);

  before(async () => {
    await server.queue.enqueue({ kind: 'report' }, acme);
    [deadId] = (await deadJobs(server.queue, acme, 'doomed', 1)) as [string];
  });

  it('enqueues a job with a JSON payload and shows its lifecycle', async () => {
    const enqueued = await run(
      'jobs',
      'enqueue',
      '--kind',
      'email',
      '--tenant',
      'acme',
      '--payload',
      '{"to":"a@b.c"}',
      '--json',
    );
    assert.equal(enqueued.code, 0, enqueued.stderr);
    const { created, job } = JSON.parse(enqueued.stdout) as {
      created: boolean;
      job: { jobId: string; payloadText: string; state: string };
    };
    assert.equal(created, true);
    assert.equal(job.payloadText, '{"to":"a@b.c"}');
    assert.equal(job.state, 'pending');

    const shown = await run('jobs', 'show', job.jobId);
    assert.equal(shown.code, 0);
    assert.match(shown.stdout, new RegExp(`^job\\s+${job.jobId}$`, 'm'));
    assert.match(shown.stdout, /^state\s+pending, ready to lease$/m);
    assert.match(shown.stdout, /^attempts\s+0 of 5$/m);
    assert.match(shown.stdout, /^payload\s+\{"to":"a@b\.c"\}$/m);
    assert.match(shown.stdout, /^lifecycle$/m);
    assert.match(shown.stdout, /enqueued/);
  });

  it('enqueues with --timeout-secs and shows the timeout, and the attempt deadline while leased', async () => {
    const enqueued = await run('jobs', 'enqueue', '--kind', 'slow', '--tenant', 'acme', '--timeout-secs', '90');
    assert.equal(enqueued.code, 0, enqueued.stderr);
    const jobId = enqueued.stdout.trim();
    assert.equal((await server.queue.show(jobId)).timeoutSecs, 90);
    await server.queue.leaseNext({ workerId: 'w-slow', kinds: ['slow'], scope: acme });
    const shown = await run('jobs', 'show', jobId);
    assert.match(shown.stdout, /^timeout\s+1m30s per attempt$/m);
    assert.match(shown.stdout, /^state\s+leased by w-slow .*, times out at \d{4}-/m);
  });

  it('enqueues with --supersede-key and --debounce-ms through gRPC, and shows who replaced the old job', async () => {
    const args = ['jobs', 'enqueue', '--kind', 'reindex', '--tenant', 'acme', '--supersede-key', 'doc-7'];
    const first = await run(...args, '--debounce-ms', '5000', '--debounce-max-ms', '20000');
    assert.equal(first.code, 0, first.stderr);
    const firstId = first.stdout.trim();
    const debounced = await server.queue.show(firstId);
    assert.equal(debounced.notBefore, (debounced.events[0]?.at ?? 0) + 5_000_000, 'due one window after its enqueue');
    assert.equal(debounced.debounceUntil, (debounced.events[0]?.at ?? 0) + 20_000_000, 'its run bound 20 s out');
    const second = await run(...args, '--supersede', 'leased');
    assert.equal(second.code, 0, second.stderr);
    const secondId = second.stdout.trim();
    const shown = await run('jobs', 'show', firstId);
    assert.match(shown.stdout, /^supersede\s+doc-7$/m);
    assert.match(shown.stdout, new RegExp(`^replaced\\s+by ${secondId} \\(superseded\\)$`, 'm'));
    assert.match(shown.stdout, new RegExp(`reason=superseded successor=${secondId}`));
    const bad = await run(...args, '--supersede', 'all');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--supersede must be pending or leased/);
    const refused = await run('jobs', 'enqueue', '--kind', 'reindex', '--tenant', 'acme', '--debounce-ms', '5');
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /--debounce-ms/);
    const unbounded = await run(...args, '--debounce-ms', '5000', '--debounce-max-ms', '10');
    assert.notEqual(unbounded.code, 0);
    assert.match(unbounded.stderr, /--debounce-max-ms/);
  });

  it('prints only the new job’s id, so a shell can capture it', async () => {
    const first = await run('jobs', 'enqueue', '--kind', 'email', '--tenant', 'acme', '--idempotency-key', 'order-9');
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^[0-9a-f-]{36}\n$/);
    assert.equal(first.stderr, '');
    const again = await run('jobs', 'enqueue', '--kind', 'email', '--tenant', 'acme', '--idempotency-key', 'order-9');
    assert.equal(again.stdout, first.stdout);
    assert.match(again.stderr, /already enqueued/);
  });

  it('reads a raw payload from a file', async () => {
    const file = join(server.dir, 'payload.bin');
    writeFileSync(file, Buffer.from([0, 1, 2, 255]));
    const enqueued = await run(
      'jobs',
      'enqueue',
      '--kind',
      'blob',
      '--tenant',
      'acme',
      '--payload',
      `@${file}`,
      '--json',
    );
    assert.equal(enqueued.code, 0, enqueued.stderr);
    const { job } = JSON.parse(enqueued.stdout) as { job: { payload: string } };
    assert.equal(job.payload, Buffer.from([0, 1, 2, 255]).toString('base64'));
  });

  it('shows a dead job with its error and how to retry it', async () => {
    const shown = await run('jobs', 'show', deadId);
    assert.match(shown.stdout, /^state\s+DEAD after 1 attempt: retry with `telha jobs retry/m);
    assert.match(shown.stdout, /failed\s+worker=w-dead generation=1 attempt=1 permanent: disk full/);
  });

  it('shows a JSON result as text, a raw one by its size, and the last progress', async () => {
    await server.queue.enqueueBatch([{ kind: 'result.json' }, { kind: 'result.raw' }], acme);
    const [json, raw] = await server.queue.lease({ workerId: 'w-r', kinds: ['result.'], scope: acme, limit: 2 });
    assert.ok(json && raw);
    const fence = (leaseGeneration: number): { workerId: string; leaseGeneration: number } => ({
      workerId: 'w-r',
      leaseGeneration,
    });
    await server.queue.heartbeat(json.jobId, fence(json.leaseGeneration), { progress: '{"done":2,"of":2}' });
    await server.queue.complete(json.jobId, fence(json.leaseGeneration), { result: Buffer.from('{"sent":2}') });
    await server.queue.complete(raw.jobId, fence(raw.leaseGeneration), { result: new Uint8Array([0xff, 0xfe]) });
    const shownJson = (await run('jobs', 'show', json.jobId)).stdout;
    assert.match(shownJson, /^result\s+\{"sent":2\}$/m);
    assert.match(shownJson, /^progress\s+\{"done":2,"of":2\}$/m);
    assert.match(shownJson, /progress\s+generation=1$/m);
    assert.match((await run('jobs', 'show', raw.jobId)).stdout, /^result\s+2 bytes, base64 \/\/4=$/m);
    const asJson = JSON.parse((await run('jobs', 'show', json.jobId, '--json')).stdout) as {
      result: string;
      resultText: string;
      progress: string;
    };
    assert.equal(asJson.resultText, '{"sent":2}');
    assert.equal(Buffer.from(asJson.result, 'base64').toString(), '{"sent":2}');
    assert.equal(asJson.progress, '{"done":2,"of":2}');
  });

  it('calls a gate set at enqueue a delay, and one set by a failure backoff', async () => {
    const delayed = await server.queue.enqueue({ kind: 'later', delayMs: 60_000 }, acme);
    assert.match(
      (await run('jobs', 'show', delayed.job.jobId)).stdout,
      /^state\s+pending, gated until \d{4}-\d\d-\d\d [\d:.]+ UTC \(delay\), in (59\.\d|60\.0)s$/m,
    );
    await server.queue.enqueue({ kind: 'flaky' }, acme);
    const [leased] = await server.queue.lease({ workerId: 'w-flaky', kinds: ['flaky'], scope: acme });
    assert.ok(leased);
    const fence = { workerId: 'w-flaky', leaseGeneration: leased.leaseGeneration };
    await server.queue.fail(leased.jobId, fence, { error: 'timeout' });
    assert.match(
      (await run('jobs', 'show', leased.jobId)).stdout,
      /^state\s+pending, gated until .* \(backoff\), in /m,
    );
  });

  it('does not show a gate that has already opened', async () => {
    const { job } = await server.queue.enqueue({ kind: 'soon', delayMs: 5_000 }, acme);
    const later: Clock = { now: () => server.clock.now() + 6_000_000 };
    const shown = await telha(['--address', server.address, 'jobs', 'show', job.jobId], { clock: later });
    assert.match(shown.stdout, /^state\s+pending, ready to lease$/m);
    assert.doesNotMatch(shown.stdout, /gated/);
  });

  it('lists with filters, pages, and prints JSON for scripts', async () => {
    const table = await run('jobs', 'list', '--tenant', 'acme', '--state', 'dead');
    assert.equal(table.code, 0);
    assert.match(table.stdout, /^JOB\s+STATE\s+KIND/m);
    assert.match(table.stdout, new RegExp(`^${deadId}\\s+dead\\s+doomed\\s+acme`, 'm'));
    const page = await run('jobs', 'list', '--limit', '1', '--json');
    const parsed = JSON.parse(page.stdout) as { jobs: unknown[]; nextPageToken: string | null };
    assert.equal(parsed.jobs.length, 1);
    assert.ok(parsed.nextPageToken);
    const all = JSON.parse((await run('jobs', 'list', '--limit', '1', '--all', '--json')).stdout) as {
      jobs: unknown[];
    };
    assert.ok(all.jobs.length >= 3);
    const kinds = JSON.parse((await run('jobs', 'list', '--kind-prefix', 'rep', '--json')).stdout) as {
      jobs: { kind: string }[];
    };
    assert.deepEqual(
      kinds.jobs.map((j) => j.kind),
      ['report'],
    );
  });

  it('prints counts per state and kind', async () => {
    const counts = await run('jobs', 'counts', '--tenant', 'acme');
    assert.match(counts.stdout, /^dead\s+doomed\s+1$/m);
    assert.match(counts.stdout, /^total: /m);
    const json = JSON.parse((await run('jobs', 'stats', '--json')).stdout) as {
      state: string;
      kind: string;
      count: number;
    }[];
    assert.ok(json.some((r) => r.state === 'pending' && r.kind === 'report' && r.count === 1));
  });

  it('retries a dead job', async () => {
    const retried = await run('jobs', 'retry', deadId, '--json');
    assert.equal(retried.code, 0, retried.stderr);
    const { retried: jobs, failed } = JSON.parse(retried.stdout) as { retried: { state: string }[]; failed: [] };
    assert.deepEqual(
      jobs.map((j) => j.state),
      ['pending'],
    );
    assert.deepEqual(failed, []);
  });

  it('retries several jobs by id, each on its own, and counts what moved', async () => {
    const [a, b] = (await deadJobs(server.queue, acme, 'pair', 2)) as [string, string];
    const { job: pending } = await server.queue.enqueue({ kind: 'pair' }, acme);
    const retried = await run('jobs', 'retry', a, pending.jobId, b);
    assert.equal(retried.code, 1, 'a job that could not be retried fails the command');
    assert.match(retried.stdout, new RegExp(`^retried ${a}: pending, attempts 0$`, 'm'));
    assert.match(retried.stdout, new RegExp(`^retried ${b}: pending, attempts 0$`, 'm'));
    assert.match(retried.stdout, /^retried 2 of 3 jobs$/m);
    assert.match(retried.stderr, new RegExp(`^error: failed_precondition: job ${pending.jobId}: cannot retry`, 'm'));
    assert.equal((await server.queue.show(a)).state, JobState.Pending);
    assert.equal((await server.queue.show(b)).state, JobState.Pending);
  });

  it('retries every dead job of a kind in a scope, page after page, and says how many moved', async () => {
    const chosen = await deadJobs(server.queue, acme, 'bulk.mail', 130);
    const otherKind = await deadJobs(server.queue, acme, 'bulk.sms', 2);
    const otherTenant = await deadJobs(server.queue, globex, 'bulk.mail', 2);
    const retried = await run('jobs', 'retry', '--dead', '--kind-prefix', 'bulk.mail', '--tenant', 'acme');
    assert.equal(retried.code, 0, retried.stderr);
    assert.match(retried.stdout, /^retried 130 of 130 dead jobs$/m);
    const stateOf = async (scope: QueueScope, kindPrefix: string): Promise<Map<string, JobState>> =>
      new Map((await server.queue.list({ scope, kindPrefix, limit: 1000 })).jobs.map((j) => [j.jobId, j.state]));
    const mail = await stateOf(acme, 'bulk.mail');
    assert.ok(chosen.every((id) => mail.get(id) === JobState.Pending));
    const untouched = new Map([...(await stateOf(acme, 'bulk.sms')), ...(await stateOf(globex, 'bulk.mail'))]);
    assert.ok([...otherKind, ...otherTenant].every((id) => untouched.get(id) === JobState.Dead));
    const json = await run('jobs', 'retry', '--dead', '--tenant', 'globex', '--json');
    const parsed = JSON.parse(json.stdout) as { retried: { jobId: string }[]; failed: unknown[] };
    assert.deepEqual(parsed.retried.map((j) => j.jobId).sort(), [...otherTenant].sort());
  });

  it('refuses a retry filter without a scope, naming both flags, and ids mixed with a filter', async () => {
    const unscoped = await run('jobs', 'retry', '--dead', '--kind-prefix', 'bulk');
    assert.equal(unscoped.code, 2);
    assert.match(unscoped.stderr, /--tenant <tenant> or --system/);
    assert.equal((await run('jobs', 'retry', deadId, '--dead', '--tenant', 'acme')).code, 2);
    assert.equal((await run('jobs', 'retry', deadId, '--tenant', 'acme')).code, 2);
    assert.equal((await run('jobs', 'retry')).code, 2);
  });

  it('discards dead jobs by id and every dead job of a kind with --dead, keeping each record', async () => {
    const [one] = (await deadJobs(server.queue, acme, 'discard.one', 1)) as [string];
    const byId = await run('jobs', 'discard', one, '--reason', 'bad input');
    assert.equal(byId.code, 0, byId.stderr);
    assert.match(byId.stdout, new RegExp(`^discarded ${one}: cancelled, attempts 1$`, 'm'));
    const shown = await server.queue.show(one);
    assert.deepEqual(shown.events.at(-1)?.transition, 'discarded');
    assert.match(shown.events.at(-1)?.detail ?? '', /reason=bad input$/);
    const many = await deadJobs(server.queue, acme, 'discard.many', 3);
    const unscoped = await run('jobs', 'discard', '--dead', '--kind-prefix', 'discard.many');
    assert.equal(unscoped.code, 2, 'a filter needs its scope named');
    const bulk = await run('jobs', 'discard', '--dead', '--tenant', 'acme', '--kind-prefix', 'discard.many', '--json');
    assert.equal(bulk.code, 0, bulk.stderr);
    const parsed = JSON.parse(bulk.stdout) as { discarded: { jobId: string; state: string }[] };
    assert.deepEqual(parsed.discarded.map((j) => j.jobId).sort(), [...many].sort());
    assert.ok(parsed.discarded.every((j) => j.state === 'cancelled'));
  });

  it('runs a delayed job now, and refuses one that is ready already', async () => {
    const { job: later } = await server.queue.enqueue({ kind: 'run.later', delayMs: 3_600_000 }, acme);
    const { job: ready } = await server.queue.enqueue({ kind: 'run.ready' }, acme);
    const ran = await run('jobs', 'run-now', later.jobId, ready.jobId);
    assert.equal(ran.code, 1, 'a job that could not be moved fails the command');
    assert.match(ran.stdout, new RegExp(`^ready ${later.jobId}: pending, attempts 0$`, 'm'));
    assert.match(ran.stderr, new RegExp(`^error: failed_precondition: job ${ready.jobId}: already ready`, 'm'));
    assert.equal((await server.queue.show(later.jobId)).notBefore, null);
    assert.equal((await run('jobs', 'run-now', later.jobId, '--dead')).code, 2);
  });

  it('lists newest first, oldest first with --oldest-first, and system jobs only with --include-system', async () => {
    const first = (await server.queue.enqueue({ kind: 'order.x' }, globex)).job.jobId;
    const second = (await server.queue.enqueue({ kind: 'order.x' }, acme)).job.jobId;
    const system = (await server.queue.enqueue({ kind: 'system:order' }, SYSTEM_SCOPE)).job.jobId;
    const ids = async (...flags: string[]): Promise<string[]> => {
      const listed = await run('jobs', 'list', '--state', 'pending', '--limit', '1000', '--json', ...flags);
      assert.equal(listed.code, 0, listed.stderr);
      const jobs = (JSON.parse(listed.stdout) as { jobs: { jobId: string }[] }).jobs.map((j) => j.jobId);
      return jobs.filter((id) => [first, second, system].includes(id));
    };
    assert.deepEqual(await ids(), [second, first]);
    assert.deepEqual(await ids('--oldest-first'), [first, second]);
    assert.deepEqual(await ids('--include-system'), [system, second, first]);
  });

  it('cancels jobs by id, each on its own, and says which could not be cancelled', async () => {
    const { job: pending } = await server.queue.enqueue({ kind: 'cancel.one' }, acme);
    const [dead] = (await deadJobs(server.queue, acme, 'cancel.dead', 1)) as [string];
    const cancelled = await run('jobs', 'cancel', pending.jobId, dead, '--reason', 'ordered twice');
    assert.equal(cancelled.code, 1, 'a job that could not be cancelled fails the command');
    assert.match(cancelled.stdout, new RegExp(`^cancelled ${pending.jobId}$`, 'm'));
    assert.match(cancelled.stdout, /^cancelled 1 of 2 jobs$/m);
    assert.match(cancelled.stderr, new RegExp(`^error: failed_precondition: job ${dead}: cannot cancel`, 'm'));
    const shown = await server.queue.show(pending.jobId);
    assert.equal(shown.state, JobState.Cancelled);
    assert.match(shown.events.at(-1)?.detail ?? '', /reason=ordered twice$/);
    const listed = await run('jobs', 'list', '--state', 'cancelled', '--kind-prefix', 'cancel.', '--json');
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(pending.jobId));
  });

  it('cancels every pending or leased job of a kind prefix, in one scope or only one state', async () => {
    await server.queue.enqueueBatch([{ kind: 'sweep.a' }, { kind: 'sweep.b' }, { kind: 'keep' }], acme);
    await server.queue.enqueue({ kind: 'sweep.a' }, globex);
    const [leased] = await server.queue.lease({ workerId: 'w-sweep', kinds: ['sweep.b'], scope: acme });
    assert.ok(leased);
    const pendingOnly = await run(
      'jobs',
      'cancel',
      '--kind-prefix',
      'sweep.',
      '--tenant',
      'acme',
      '--state',
      'pending',
    );
    assert.equal(pendingOnly.code, 0, pendingOnly.stderr);
    assert.match(pendingOnly.stdout, /^cancelled 1 jobs$/m);
    assert.equal((await server.queue.show(leased.jobId)).state, JobState.Leased);
    const rest = await run('jobs', 'cancel', '--kind-prefix', 'sweep.', '--tenant', 'acme', '--json');
    assert.deepEqual(JSON.parse(rest.stdout), { cancelled: 1 });
    assert.equal((await server.queue.show(leased.jobId)).state, JobState.Cancelled);
    const globexSweep = await server.queue.list({ scope: globex, kindPrefix: 'sweep.' });
    assert.deepEqual(
      globexSweep.jobs.map((j) => j.state),
      [JobState.Pending],
    );
    assert.equal((await run('jobs', 'cancel')).code, 2);
    assert.equal((await run('jobs', 'cancel', MISSING_ID, '--kind-prefix', 'x')).code, 2);
    assert.equal((await run('jobs', 'cancel', MISSING_ID, '--tenant', 'acme')).code, 2);
    assert.equal((await run('jobs', 'cancel', '--kind-prefix', 'x', '--state', 'dead')).code, 2);
  });

  it("fails with exit code 1 and the server's error for a failed call", async () => {
    const shown = await run('jobs', 'show', MISSING_ID);
    assert.equal(shown.code, 1);
    assert.match(shown.stderr, new RegExp(`^error: not_found: job ${MISSING_ID} not found$`, 'm'));
    const again = await run('jobs', 'retry', 'nope');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /invalid_argument: job_id/);
  });

  it('fails with exit code 2 for bad usage', async () => {
    assert.equal((await run('jobs', 'list', '--state', 'bogus')).code, 2);
    assert.equal((await run('jobs', 'enqueue')).code, 2);
    const payload = await run('jobs', 'enqueue', '--kind', 'k', '--tenant', 'acme', '--payload', '{not json');
    assert.equal(payload.code, 2);
    assert.match(payload.stderr, /--payload must be JSON/);
  });

  it('refuses a value the server refuses as bad usage, naming the flag rather than the wire field', async () => {
    const cases: [string[], string][] = [
      [
        ['jobs', 'enqueue', '--kind', 'k', '--tenant', 'acme', '--priority', '300'],
        '--priority must be between 0 and 255 (got 300)',
      ],
      [['jobs', 'enqueue', '--kind', 'k', '--tenant', 'acme', '--delay-ms', '-5'], '--delay-ms must be between 0 and'],
      [
        ['schedules', 'create', 'never', '--kind', 'k', '--tenant', 'acme', '--every', '0'],
        '--every must be between 1 and',
      ],
    ];
    for (const [args, problem] of cases) {
      const refused = await run(...args);
      assert.equal(refused.code, 2, args.join(' '));
      assert.ok(refused.stderr.startsWith(`error: ${problem}`), refused.stderr);
      assert.doesNotMatch(refused.stderr, /delay_ms|every_secs|invalid_argument/);
    }
  });

  it('prints the usage line and the one problem after a usage error, not the whole help', async () => {
    const refused = await run('jobs', 'list', '--state', 'bogus');
    assert.equal(refused.code, 2);
    assert.equal(
      refused.stderr,
      "error: option '--state <state>' argument 'bogus' is invalid. Allowed choices are pending, leased, completed, dead, cancelled.\n" +
        'usage: telha jobs list [options]\n(`telha jobs list --help` for more)\n',
    );
  });

  it('prints times in one date format in jobs show, its lifecycle, and schedules', async () => {
    const date = /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC/;
    const { job } = await server.queue.enqueue({ kind: 'dated' }, acme);
    const shown = (await run('jobs', 'show', job.jobId)).stdout;
    assert.match(shown, new RegExp(`^created    ${date.source}$`, 'm'));
    assert.match(shown, new RegExp(`^  ${date.source}\\s+\\+\\S+\\s+enqueued`, 'm'));
    assert.equal(
      (await run('schedules', 'create', 'dated', '--kind', 'k', '--tenant', 'acme', '--every', '60')).code,
      0,
    );
    const listed = (await run('schedules', 'list', '--tenant', 'acme')).stdout;
    assert.match(listed, date);
    assert.doesNotMatch(listed, /\d\dT\d\d:|Z\b/);
  });

  it('offers no failed state to list, since no job is ever Failed', async () => {
    const failed = await run('jobs', 'list', '--state', 'failed');
    assert.equal(failed.code, 2);
    assert.match(failed.stderr, /Allowed choices are pending, leased, completed, dead/);
  });

  it('refuses an enqueue without a scope as bad usage, naming --tenant and --system', async () => {
    const enqueued = await run('jobs', 'enqueue', '--kind', 'email');
    assert.equal(enqueued.code, 2);
    assert.match(enqueued.stderr, /^error: jobs enqueue needs a scope: --tenant <tenant> or --system$/m);
    assert.equal((await run('jobs', 'enqueue', '--kind', 'email', '--tenant', 'acme', '--system')).code, 2);
  });

  it('checks --limit before sending anything', async () => {
    // Nothing listens at port 1: a request sent there would fail with exit code 1, not 2.
    for (const limit of ['0', '1001', '-3', 'ten']) {
      const listed = await telha(['--address', '127.0.0.1:1', 'jobs', 'list', '--limit', limit], server);
      assert.equal(listed.code, 2, limit);
      assert.match(listed.stderr, /--limit must be an integer from 1 to 1000/);
    }
    assert.equal((await run('jobs', 'list', '--limit', '1000')).code, 0);
  });

  it('checks every numeric flag against the number the wire carries before sending anything', async () => {
    // Nothing listens there: a request sent would fail with exit code 1, not 2.
    const nowhere = `127.0.0.1:${await freePort()}`;
    const uint32 = 'an integer from 0 to 4294967295';
    const cases: [string[], string, string][] = [
      [['limits', 'set', 'email', '--concurrency', '-1'], '--concurrency', uint32],
      [['limits', 'set', 'email', '--concurrency', '99999999999'], '--concurrency', uint32],
      [['schedules', 'create', 'nightly', '--kind', 'k', '--tenant', 'acme', '--every', '-3'], '--every', uint32],
      [['jobs', 'enqueue', '--kind', 'k', '--tenant', 'acme', '--max-attempts', '-1'], '--max-attempts', uint32],
      [['jobs', 'enqueue', '--kind', 'k', '--tenant', 'acme', '--timeout-secs', '-1'], '--timeout-secs', uint32],
      [['jobs', 'enqueue', '--kind', 'k', '--tenant', 'acme', '--priority', '4294967296'], '--priority', uint32],
      [
        ['jobs', 'enqueue', '--kind', 'k', '--tenant', 'acme', '--delay-ms', '9007199254740992'],
        '--delay-ms',
        'an integer from -9007199254740991 to 9007199254740991',
      ],
      [['schedules', 'update', 'nightly', '--tenant', 'acme', '--every', '1.5'], '--every', uint32],
      [
        ['schedules', 'update', 'nightly', '--tenant', 'acme', '--kind', 'k', '--max-attempts', '-1'],
        '--max-attempts',
        uint32,
      ],
    ];
    for (const [args, flag, range] of cases) {
      const refused = await telha(['--address', nowhere, ...args], server);
      assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.stderr}`);
      assert.match(refused.stderr, new RegExp(`${flag} must be ${range}`), args.join(' '));
    }
  });

  it('prints its version', async () => {
    for (const flag of ['--version', '-V']) {
      const printed = await run(flag);
      assert.equal(printed.code, 0);
      assert.equal(printed.stdout, `${VERSION}\n`);
    }
  });

  it('has --help on every command', async () => {
    for (const args of [
      [],
      ['serve'],
      ['jobs'],
      ['jobs', 'show'],
      ['jobs', 'list'],
      ['jobs', 'retry'],
      ['jobs', 'cancel'],
      ['jobs', 'enqueue'],
      ['jobs', 'stats'],
      ['schedules'],
      ['schedules', 'create'],
      ['schedules', 'list'],
      ['schedules', 'show'],
      ['schedules', 'update'],
      ['schedules', 'pause'],
      ['schedules', 'resume'],
      ['schedules', 'delete'],
      ['schedules', 'run'],
    ]) {
      const help = await run(...args, '--help');
      assert.equal(help.code, 0, args.join(' '));
      assert.match(help.stdout, /^Usage: telha/m);
    }
  });

  it('creates, lists, shows, pauses, resumes, updates and deletes a schedule', async () => {
    const created = await run(
      'schedules',
      'create',
      'nightly',
      '--tenant',
      'acme',
      '--cron',
      '0 2 * * *',
      '--timezone',
      'Europe/Berlin',
      '--kind',
      'cleanup',
      '--payload',
      '{"deep":true}',
      '--json',
    );
    assert.equal(created.code, 0, created.stderr);
    const json = JSON.parse(created.stdout) as {
      cron: string;
      timezone: string;
      job: { payloadText: string };
      paused: boolean;
    };
    assert.equal(json.cron, '0 2 * * *');
    assert.equal(json.timezone, 'Europe/Berlin');
    assert.equal(json.job.payloadText, '{"deep":true}');
    assert.equal(json.paused, false);

    const listed = await run('schedules', 'list', '--tenant', 'acme');
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^SCOPE\s+NAME\s+WHEN/m);
    assert.match(listed.stdout, /acme\s+nightly\s+0 2 \* \* \* Europe\/Berlin\s+cleanup\s+active/);

    const paused = await run('schedules', 'pause', 'nightly', '--tenant', 'acme');
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(paused.stdout, /state\s+paused/);
    assert.match(paused.stdout, /next due\s+-/);
    const resumed = await run('schedules', 'resume', 'nightly', '--tenant', 'acme');
    assert.match(resumed.stdout, /state\s+active/);
    const updated = await run('schedules', 'update', 'nightly', '--tenant', 'acme', '--every', '3600', '--json');
    assert.equal(updated.code, 0, updated.stderr);
    assert.equal((JSON.parse(updated.stdout) as { everySecs: number }).everySecs, 3_600);
    const shown = await run('schedules', 'show', 'nightly', '--tenant', 'acme');
    assert.match(shown.stdout, /when\s+every 3600s/);

    const bad = await run('schedules', 'create', 'bad', '--tenant', 'acme', '--cron', '* * *', '--kind', 'k');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^error: --cron /m);
    const noScope = await run('schedules', 'create', 'x', '--every', '60', '--kind', 'k');
    assert.equal(noScope.code, 2);
    assert.match(noScope.stderr, /--tenant <tenant> or --system/);
    const nothing = await run('schedules', 'update', 'nightly', '--tenant', 'acme');
    assert.equal(nothing.code, 2);

    const ran = await run('schedules', 'run', 'nightly', '--tenant', 'acme', '--json');
    assert.equal(ran.code, 0, ran.stderr);
    const enqueued = JSON.parse(ran.stdout) as { created: boolean; job: { jobId: string; kind: string } };
    assert.equal(enqueued.created, true);
    assert.equal(enqueued.job.kind, 'cleanup');
    assert.match((await run('schedules', 'show', 'nightly', '--tenant', 'acme')).stdout, /state\s+active/);
    const missing = await run('schedules', 'run', 'absent', '--tenant', 'acme');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^error: not_found: /m);

    const deleted = await run('schedules', 'delete', 'nightly', '--tenant', 'acme');
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal(deleted.stdout, 'deleted schedule nightly\n');
    const gone = await run('schedules', 'show', 'nightly', '--tenant', 'acme');
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /^error: not_found: /m);
  });

  it('takes the address and token from TELHA_ADDRESS and TELHA_TOKEN', async () => {
    const counted = await telha(['jobs', 'counts', '--json'], {
      clock: server.clock,
      env: { TELHA_ADDRESS: server.address },
    });
    assert.equal(counted.code, 0, counted.stderr);
    assert.ok(Array.isArray(JSON.parse(counted.stdout)));
  });

  it('reports an unreachable server clearly', async () => {
    const counted = await telha(['--address', '127.0.0.1:1', 'jobs', 'counts'], server);
    assert.equal(counted.code, 1);
    assert.match(counted.stderr, /^error: unavailable: /m);
  });
});

describe('the telha CLI with tokens', () => {
  const TENANT = 'acme-token-0123456789';
  const OPERATOR = 'operator-token-0123456789';
  let server: TestServer;
  const as = (token: string, ...args: string[]): Promise<Run> =>
    telha(['--address', server.address, '--token', token, ...args], server);

  before(async () => {
    server = await startTestServer({
      server: {
        tokens: [
          { token: TENANT, role: 'tenant', tenant: 'acme' },
          { token: OPERATOR, role: 'operator' },
        ],
      },
    });
  });
  after(async () => {
    await server.close();
  });

  it("enqueues in a tenant token's own scope without --tenant", async () => {
    const enqueued = await as(TENANT, 'jobs', 'enqueue', '--kind', 'email');
    assert.equal(enqueued.code, 0, enqueued.stderr);
    assert.equal((await server.queue.show(enqueued.stdout.trim())).tenant, 'acme');
  });

  it('leaves retrying to operators, as the server decides', async () => {
    await deadJobs(server.queue, acme, 'doomed', 1);
    const denied = await as(TENANT, 'jobs', 'retry', '--dead', '--tenant', 'acme');
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /^error: permission_denied: /m);
    const allowed = await as(OPERATOR, 'jobs', 'retry', '--dead', '--tenant', 'acme');
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.match(allowed.stdout, /^retried 1 of 1 dead jobs$/m);
  });
});

describe('the telha binary', () => {
  it('runs from the build with plain node: the version, and exit codes 1 and 2', async () => {
    const bin = join(ROOT, 'dist/cli/main.js');
    assert.match(
      readFileSync(bin, 'utf8'),
      /^#!\/usr\/bin\/env node\n/,
      'built by npm run build (npm test builds first)',
    );
    assert.ok((statSync(bin).mode & 0o111) !== 0, 'executable, so npx telha can run it');
    const exec = async (...args: string[]): Promise<Run> => {
      try {
        const { stdout, stderr } = await promisify(execFile)(process.execPath, [bin, ...args]);
        return { code: 0, stdout, stderr };
      } catch (error) {
        const e = error as Run;
        return { code: e.code, stdout: e.stdout, stderr: e.stderr };
      }
    };
    assert.equal((await exec('--version')).stdout, `${VERSION}\n`);
    const unreachable = await exec('--address', '127.0.0.1:1', 'jobs', 'show', MISSING_ID);
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /^error: unavailable: /m);
    assert.equal((await exec('jobs', 'list', '--state', 'failed')).code, 2);
  });
});
