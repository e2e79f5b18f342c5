import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { ErrorCode } from '../../src/core/errors.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { written } from '../support/events.ts';
import { rejectsWith, TOKEN_ROLES, TOKENS } from '../support/refuses.ts';
import { serversClosedAfterEach } from '../support/server.ts';

const acme = tenantScope('acme');
describe('schedules over the SDK', () => {
  const startServer = serversClosedAfterEach();

  it('creates, reads, lists, pauses, resumes and deletes a schedule, which fires once per due time', async () => {
    const server = await startServer();
    const client = new TelhaClient({ address: server.address });
    const created = await client.createSchedule(
      { name: 'minutely', everySecs: 60, job: { kind: 'report', payload: 'x', priority: 3, maxAttempts: 2 } },
      acme,
    );
    assert.equal(created.everySecs, 60);
    assert.deepEqual(created.scope, acme);
    assert.equal(created.job.priority, 3);
    assert.deepEqual(await client.getSchedule('minutely', acme), created);
    await client.createSchedule(
      { name: 'nightly', cron: '0 2 * * *', timezone: 'Europe/Berlin', job: { kind: 'cleanup' } },
      acme,
    );
    const page = await client.listSchedules({ scope: acme });
    assert.deepEqual(
      page.schedules.map((s) => s.name),
      ['minutely', 'nightly'],
    );
    assert.equal(page.nextPageToken, null);

    server.clock.advance(60_000_000);
    const fired = await server.queue.scheduler.tick();
    assert.equal(fired.length, 1);
    assert.equal((await server.queue.scheduler.tick()).length, 0, 'a second pass at once fires nothing');
    const jobs = await client.list({ scope: acme, state: JobState.Pending });
    assert.equal(jobs.jobs.length, 1);
    assert.equal(jobs.jobs[0]?.kind, 'report');
    assert.match(jobs.jobs[0]?.idempotencyKey ?? '', /^schedule:minutely@\d{4}-\d\d-\d\dT/);

    const paused = await client.updateSchedule('minutely', { paused: true }, acme);
    assert.equal(paused.paused, true);
    assert.equal(paused.nextDueAt, null);
    const resumed = await client.updateSchedule('minutely', { paused: false, everySecs: 120 }, acme);
    assert.equal(resumed.paused, false);
    assert.equal(resumed.everySecs, 120);
    assert.ok(resumed.nextDueAt !== null && resumed.nextDueAt > server.clock.now());

    await rejectsWith(
      client.createSchedule({ name: 'bad', cron: '* * *', job: { kind: 'k' } }, acme),
      ErrorCode.InvalidArgument,
      'cron',
    );
    await rejectsWith(
      client.createSchedule({ name: 'bad', cron: '0 * * * *', timezone: 'Mars/Olympus', job: { kind: 'k' } }, acme),
      ErrorCode.InvalidArgument,
      'timezone',
    );
    await rejectsWith(
      client.createSchedule({ name: 'minutely', everySecs: 5, job: { kind: 'k' } }, acme),
      ErrorCode.FailedPrecondition,
    );
    await rejectsWith(
      client.createSchedule({ name: 'anywhere', everySecs: 5, job: { kind: 'k' } }),
      ErrorCode.InvalidArgument,
      'scope',
    );

    const before = await client.getSchedule('nightly', acme);
    const run = await client.runSchedule('nightly', acme);
    assert.equal(run.created, true);
    assert.equal(run.job.kind, 'cleanup');
    assert.equal(run.job.state, JobState.Pending);
    assert.match(run.job.idempotencyKey ?? '', /^schedule:nightly@run:\d{4}-/);
    assert.deepEqual(await client.getSchedule('nightly', acme), before, 'running it now changes nothing of it');
    await rejectsWith(client.runSchedule('absent', acme), ErrorCode.NotFound);

    await client.deleteSchedule('minutely', acme);
    await rejectsWith(client.getSchedule('minutely', acme), ErrorCode.NotFound);
    assert.equal((await client.listSchedules()).schedules.length, 1);
  });

  it('refuses a job template with latest wins over gRPC, naming the field, and stores nothing', async () => {
    const server = await startServer();
    const client = new TelhaClient({ address: server.address });
    // The client's types leave these fields out of a template; the wire carries them all the same.
    const templates: [object, string][] = [
      [{ kind: 'k', supersedeKey: 'report' }, 'job.supersede_key'],
      [{ kind: 'k', supersede: 'leased' }, 'job.supersede'],
      [{ kind: 'k', supersedeKey: 'report', debounceMs: 1_000 }, 'job.supersede_key'],
      [{ kind: 'k', debounceMs: 1_000 }, 'job.debounce_ms'],
    ];
    for (const [job, field] of templates) {
      await rejectsWith(
        client.createSchedule({ name: 'latest', everySecs: 60, job: job as never }, acme),
        ErrorCode.InvalidArgument,
        field,
      );
    }
    assert.deepEqual((await client.listSchedules({ scope: acme })).schedules, []);
    const kept = await client.createSchedule({ name: 'kept', everySecs: 60, job: { kind: 'k' } }, acme);
    await rejectsWith(
      client.updateSchedule('kept', { job: { kind: 'k', supersedeKey: 'report' } as never }, acme),
      ErrorCode.InvalidArgument,
      'job.supersede_key',
    );
    assert.deepEqual(await client.getSchedule('kept', acme), kept);
  });

  it('fires schedules on its own timer when the services run, and not when schedules.enabled is off', async () => {
    let server = await startServer({ schedules: { interval_ms: 10 } }, { services: true });
    const client = new TelhaClient({ address: server.address });
    await client.createSchedule({ name: 'minutely', everySecs: 60, job: { kind: 'timed' } }, acme);
    const fired = written(server.queue, 'a job from the schedule', (job) => job.kind === 'timed');
    server.clock.advance(60_000_000);
    assert.equal(server.queue.scheduler.running, true);
    const [job] = await fired;
    assert.match(job?.idempotencyKey ?? '', /^schedule:minutely@/);
    await server.close();

    server = await startServer({ schedules: { enabled: false } }, { services: true });
    assert.equal(server.queue.scheduler.running, false);
    await server.queue.createSchedule({ name: 'minutely', everySecs: 60, job: { kind: 'timed' } }, acme);
    server.clock.advance(60_000_000);
    // The pass a test drives still fires: only the timer is off.
    assert.equal((await server.queue.scheduler.tick()).length, 1);
  });

  it("lets a tenant manage only its own scope's schedules, and a worker none", async () => {
    const server = await startServer({
      server: {
        tokens: [...TOKEN_ROLES],
      },
    });
    const address = server.address;
    const [acmeClient, globex, worker, operator] = [TOKENS.acme, TOKENS.globex, TOKENS.worker, TOKENS.operator].map(
      (token) => new TelhaClient({ address, token }),
    ) as [TelhaClient, TelhaClient, TelhaClient, TelhaClient];

    const own = await acmeClient.createSchedule({ name: 'mine', everySecs: 60, job: { kind: 'k' } });
    assert.deepEqual(own.scope, acme, "a tenant's schedule goes to its own scope");
    await rejectsWith(globex.getSchedule('mine'), ErrorCode.NotFound);
    await rejectsWith(globex.updateSchedule('mine', { paused: true }), ErrorCode.NotFound);
    await rejectsWith(globex.deleteSchedule('mine'), ErrorCode.NotFound);
    await rejectsWith(globex.runSchedule('mine'), ErrorCode.NotFound);
    await rejectsWith(worker.runSchedule('mine', acme), ErrorCode.PermissionDenied);
    assert.equal((await acmeClient.runSchedule('mine')).job.tenant, 'acme');
    await rejectsWith(globex.getSchedule('mine', acme), ErrorCode.PermissionDenied);
    assert.deepEqual((await globex.listSchedules()).schedules, []);
    await rejectsWith(worker.listSchedules(), ErrorCode.PermissionDenied);
    await rejectsWith(
      worker.createSchedule({ name: 'w', everySecs: 60, job: { kind: 'k' } }, acme),
      ErrorCode.PermissionDenied,
    );
    assert.equal((await operator.getSchedule('mine', acme)).name, 'mine');
    await operator.updateSchedule('mine', { paused: true }, acme);
    assert.equal((await acmeClient.getSchedule('mine')).paused, true);
  });
});
