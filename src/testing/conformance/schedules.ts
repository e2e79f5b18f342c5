/** Conformance cases: schedules, their refusals and bounds, and firing once per due time. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { draftSchedule, type NewSchedule } from '../../core/schedules.ts';
import { JobState, type QueueScope } from '../../core/types.ts';
import type { Suite } from './context.ts';
import { acme, ErrorCode, globex, rejects, SECOND } from './context.ts';

const MINUTE = 60 * SECOND;

function every(name: string, secs: number, kind = 'report'): NewSchedule {
  return { name, everySecs: secs, job: { kind, payload: 'p', priority: 7, maxAttempts: 3 } };
}

function iso(micros: number): string {
  return new Date(micros / 1000).toISOString();
}

export function scheduleCases(s: Suite): void {
  /** Jobs of `scope` with their idempotency keys, oldest first. */
  async function firedKeys(scope: QueueScope = acme): Promise<(string | null)[]> {
    return (await s.q.list({ scope, order: 'oldest_first' })).jobs.map((job) => job.idempotencyKey);
  }

  describe('schedules', () => {
    it('creates, reads, lists, updates and deletes a schedule', async () => {
      const start = s.now();
      const created = await s.q.createSchedule(every('hourly', 3_600), acme);
      assert.equal(created.nextDueAt, start + 3_600 * SECOND);
      assert.deepEqual(await s.q.getSchedule('hourly', acme), created);
      await s.q.createSchedule(
        { name: 'nightly', cron: '0 2 * * *', timezone: 'Europe/Berlin', job: { kind: 'cleanup' } },
        acme,
      );
      const page = await s.q.listSchedules({ scope: acme });
      assert.deepEqual(
        page.schedules.map((x) => x.name),
        ['hourly', 'nightly'],
      );
      assert.equal(page.nextPageToken, null);
      const first = await s.q.listSchedules({ scope: acme, limit: 1 });
      assert.equal(first.schedules.length, 1);
      assert.ok(first.nextPageToken);
      const second = await s.q.listSchedules({ scope: acme, limit: 1, pageToken: first.nextPageToken });
      assert.deepEqual(
        [...first.schedules, ...second.schedules].map((x) => x.name),
        ['hourly', 'nightly'],
      );
      assert.equal(second.nextPageToken, null);

      s.h.clock.advanceSeconds(10);
      const updated = await s.q.updateSchedule('hourly', { everySecs: 60, job: { kind: 'report2' } }, acme);
      assert.equal(updated.everySecs, 60);
      assert.equal(updated.job.kind, 'report2');
      assert.equal(updated.nextDueAt, start + MINUTE, 'an interval counts from creation');
      assert.equal(updated.updatedAt, s.now());
      const nightly = await s.q.getSchedule('nightly', acme);
      assert.equal(nightly.timezone, 'Europe/Berlin');
      assert.equal(iso(nightly.nextDueAt ?? 0), '2026-01-01T01:00:00.000Z', '02:00 in Berlin is 01:00 UTC in winter');
      const retimed = await s.q.updateSchedule('nightly', { cron: '0 3 * * *' }, acme);
      assert.equal(retimed.timezone, 'Europe/Berlin', 'a new expression keeps the time zone');
      assert.equal(iso(retimed.nextDueAt ?? 0), '2026-01-01T02:00:00.000Z');

      await s.q.deleteSchedule('hourly', acme);
      await rejects(s.q.getSchedule('hourly', acme), ErrorCode.NotFound);
      await rejects(s.q.deleteSchedule('hourly', acme), ErrorCode.NotFound);
      await rejects(s.q.updateSchedule('hourly', { paused: true }, acme), ErrorCode.NotFound);
      assert.deepEqual(
        (await s.q.listSchedules()).schedules.map((x) => x.name),
        ['nightly'],
      );
    });

    it('refuses an invalid schedule naming the field, and writes nothing', async () => {
      const refusals: [NewSchedule, string][] = [
        [every('', 60), 'name'],
        [every('x'.repeat(129), 60), 'name'],
        [every('two words', 60), 'name'],
        [{ name: 'c', cron: '* * *', job: { kind: 'k' } }, 'cron'],
        [{ name: 'c', cron: '0 0 31 2 *', job: { kind: 'k' } }, 'cron'],
        [{ name: 'c', cron: '0 * * * *', timezone: 'Mars/Olympus', job: { kind: 'k' } }, 'timezone'],
        [{ name: 'c', cron: '0 * * * *', everySecs: 60, job: { kind: 'k' } }, 'every_secs'],
        [{ name: 'c', job: { kind: 'k' } }, 'cron'],
        [every('c', 0), 'every_secs'],
        [{ name: 'c', everySecs: 60, timezone: 'UTC', job: { kind: 'k' } }, 'timezone'],
        [every('c', 60, ''), 'job.kind'],
        [every('c', 60, 'system:prune'), 'job.kind'],
        [{ name: 'c', everySecs: 60, job: { kind: 'k', priority: 300 } }, 'job.priority'],
        [{ name: 'c', everySecs: 60, job: { kind: 'k', idempotencyKey: 'mine' } as never }, 'job.idempotency_key'],
        [{ name: 'c', everySecs: 60, job: { kind: 'k', supersedeKey: 'mine' } as never }, 'job.supersede_key'],
        [{ name: 'c', everySecs: 60, job: { kind: 'k', supersede: 'leased' } as never }, 'job.supersede'],
        [{ name: 'c', everySecs: 60, job: { kind: 'k', debounceMs: 1_000 } as never }, 'job.debounce_ms'],
      ];
      for (const [schedule, field] of refusals) {
        await rejects(s.q.createSchedule(schedule, acme), ErrorCode.InvalidArgument, (error) =>
          assert.equal(error.field, field, `${JSON.stringify(schedule)}: ${error.message}`),
        );
      }
      assert.deepEqual((await s.q.listSchedules()).schedules, []);

      const stored = await s.q.createSchedule(every('kept', 60), acme);
      for (const [changes, field] of [
        [{ cron: '* * *' }, 'cron'],
        [{ timezone: 'Mars/Olympus' }, 'timezone'],
        [{ everySecs: -1 }, 'every_secs'],
        [{ job: { kind: 'two words' } }, 'job.kind'],
        [{ job: { kind: 'k', supersedeKey: 'mine' } as never }, 'job.supersede_key'],
      ] as const) {
        await rejects(s.q.updateSchedule('kept', changes, acme), ErrorCode.InvalidArgument, (error) =>
          assert.equal(error.field, field),
        );
      }
      await rejects(s.q.updateSchedule('kept', { timezone: 'Europe/Berlin' }, acme), ErrorCode.InvalidArgument);
      assert.deepEqual(await s.q.getSchedule('kept', acme), stored, 'the store is unchanged');
    });

    it('refuses a second schedule of one name, and one past the bound of its scope', async () => {
      await s.q.createSchedule(every('once', 60), acme);
      await rejects(s.q.createSchedule(every('once', 120), acme), ErrorCode.FailedPrecondition);
      assert.equal((await s.q.getSchedule('once', acme)).everySecs, 60);
      await s.q.createSchedule(every('once', 120), globex);

      // The seam takes the bound (the queue passes MAX_SCHEDULES_PER_SCOPE), so three stand for a thousand.
      const context = { now: s.now(), maxPayloadBytes: 1024 };
      const tenant: QueueScope = { type: 'tenant', tenant: 'bounded' };
      for (const name of ['a', 'b', 'c']) {
        await s.h.store.createSchedule(draftSchedule(tenant, every(name, 60), context), 3);
      }
      await rejects(
        s.h.store.createSchedule(draftSchedule(tenant, every('d', 60), context), 3),
        ErrorCode.FailedPrecondition,
        (error) => assert.match(error.message, /3 schedules/),
      );
      await s.h.store.createSchedule(draftSchedule(acme, every('d', 60), context), 3);
      assert.equal((await s.q.listSchedules({ scope: tenant })).schedules.length, 3);
    });

    it('fires an interval schedule once per due time, even when ticked again', async () => {
      const start = s.now();
      await s.q.createSchedule(every('minutely', 60), acme);
      assert.deepEqual(await s.q.scheduler.tick(), []);
      s.h.clock.advanceSeconds(60);
      const [fired] = await s.q.scheduler.tick();
      assert.ok(fired);
      assert.equal(fired.job.created, true);
      assert.equal(fired.job.record.kind, 'report');
      assert.equal(fired.job.record.tenant, 'acme');
      assert.equal(fired.job.record.priority, 7);
      assert.equal(fired.job.record.maxAttempts, 3);
      assert.equal(fired.job.record.payload.toString(), 'p');
      assert.equal(fired.job.record.state, JobState.Pending);
      assert.equal(fired.schedule.lastDueAt, start + MINUTE);
      assert.equal(fired.schedule.nextDueAt, start + 2 * MINUTE);
      assert.deepEqual(await s.q.scheduler.tick(), [], 'a second tick at the same time fires nothing');
      s.h.clock.advanceSeconds(59);
      assert.deepEqual(await s.q.scheduler.tick(), []);
      s.h.clock.advanceSeconds(1);
      assert.equal((await s.q.scheduler.tick()).length, 1);
      assert.deepEqual(await firedKeys(), [
        `schedule:minutely@${iso(start + MINUTE)}`,
        `schedule:minutely@${iso(start + 2 * MINUTE)}`,
      ]);
      const job = await s.q.leaseNext({ workerId: 'w', scope: acme });
      assert.equal(job?.idempotencyKey, `schedule:minutely@${iso(start + MINUTE)}`, 'a fired job is leasable');
    });

    it('fires a cron schedule at its due times in its time zone', async () => {
      // The clock starts at 2026-01-01T00:00:00Z; 09:00 in New York is 14:00 UTC in winter.
      await s.q.createSchedule(
        { name: 'morning', cron: '0 9 * * *', timezone: 'America/New_York', job: { kind: 'k' } },
        acme,
      );
      s.h.clock.set(Date.parse('2026-01-01T13:59:59Z') * 1000);
      assert.deepEqual(await s.q.scheduler.tick(), []);
      s.h.clock.advanceSeconds(1);
      const [fired] = await s.q.scheduler.tick();
      assert.equal(fired?.job.record.idempotencyKey, 'schedule:morning@2026-01-01T14:00:00.000Z');
      assert.equal(iso(fired.schedule.nextDueAt ?? 0), '2026-01-02T14:00:00.000Z');
      s.h.clock.advanceSeconds(24 * 3_600);
      await s.q.scheduler.tick();
      assert.deepEqual(await firedKeys(), [
        'schedule:morning@2026-01-01T14:00:00.000Z',
        'schedule:morning@2026-01-02T14:00:00.000Z',
      ]);
    });

    it('catches up after a long gap with one job, for the latest due time missed', async () => {
      const start = s.now();
      await s.q.createSchedule(every('minutely', 60), acme);
      await s.q.createSchedule({ name: 'hourly', cron: '0 * * * *', job: { kind: 'k' } }, acme);
      s.h.clock.advanceSeconds(5 * 3_600 + 30);
      const fired = await s.q.scheduler.tick();
      assert.equal(fired.length, 2, 'one job per schedule, not one per missed tick');
      assert.deepEqual((await firedKeys()).sort(), [
        `schedule:hourly@${iso(start + 300 * MINUTE)}`,
        `schedule:minutely@${iso(start + 300 * MINUTE)}`,
      ]);
      const minutely = await s.q.getSchedule('minutely', acme);
      assert.equal(minutely.lastDueAt, start + 300 * MINUTE);
      assert.equal(minutely.nextDueAt, start + 301 * MINUTE);
      assert.equal((await s.q.getSchedule('hourly', acme)).nextDueAt, start + 360 * MINUTE);
    });

    it('never fires a paused schedule, and resumes without catching up', async () => {
      const start = s.now();
      await s.q.createSchedule(every('minutely', 60), acme);
      const paused = await s.q.updateSchedule('minutely', { paused: true }, acme);
      assert.equal(paused.paused, true);
      assert.equal(paused.nextDueAt, null);
      s.h.clock.advanceSeconds(600);
      assert.deepEqual(await s.q.scheduler.tick(), []);
      s.h.clock.advanceSeconds(30);
      const resumed = await s.q.updateSchedule('minutely', { paused: false }, acme);
      assert.equal(resumed.nextDueAt, start + 11 * MINUTE, 'due next after now, on its own grid');
      assert.deepEqual(await s.q.scheduler.tick(), [], 'nothing for the paused stretch');
      s.h.clock.advanceSeconds(30);
      assert.equal((await s.q.scheduler.tick()).length, 1);
      assert.deepEqual(await firedKeys(), [`schedule:minutely@${iso(start + 11 * MINUTE)}`]);

      await s.q.createSchedule({ ...every('born-paused', 60), paused: true }, acme);
      s.h.clock.advanceSeconds(3_600);
      const fired = await s.q.scheduler.tick();
      assert.deepEqual(
        fired.map((f) => f.schedule.name),
        ['minutely'],
      );
    });

    it('fires each due time once when two passes run at once', async () => {
      for (const name of ['a', 'b', 'c']) await s.q.createSchedule(every(name, 60), acme);
      s.h.clock.advanceSeconds(60);
      const [one, two] = await Promise.all([s.q.scheduler.tick(), s.q.scheduler.tick()]);
      const created = [...(one ?? []), ...(two ?? [])].filter((f) => f.job.created);
      assert.equal(created.length, 3);
      assert.equal((await firedKeys()).length, 3);
    });

    it('runs a schedule now: one job of its template, its next due time and pause untouched', async () => {
      const start = s.now();
      await s.q.createSchedule(every('minutely', 60), acme);
      s.h.clock.advanceSeconds(10);
      const run = await s.q.runSchedule('minutely', acme);
      assert.equal(run.created, true);
      assert.equal(run.job.kind, 'report');
      assert.equal(run.job.tenant, 'acme');
      assert.equal(run.job.priority, 7);
      assert.equal(run.job.maxAttempts, 3);
      assert.equal(run.job.payload.toString(), 'p');
      assert.equal(run.job.state, JobState.Pending);
      assert.equal(run.job.notBefore, null, 'ready at once');
      assert.equal(run.job.idempotencyKey, `schedule:minutely@run:${iso(s.now())}`);
      const again = await s.q.runSchedule('minutely', acme);
      assert.equal(again.created, false, 'a repeat in the same instant is the same job');
      const schedule = await s.q.getSchedule('minutely', acme);
      assert.equal(schedule.nextDueAt, start + MINUTE, 'the next due time stays');
      assert.equal(schedule.lastDueAt, null);
      s.h.clock.advanceSeconds(50);
      assert.equal((await s.q.scheduler.tick()).length, 1, 'it still fires when due');
      await s.q.updateSchedule('minutely', { paused: true }, acme);
      s.h.clock.advanceSeconds(1);
      await s.q.runSchedule('minutely', acme);
      assert.equal((await s.q.getSchedule('minutely', acme)).paused, true, 'a paused schedule runs and stays paused');
      assert.equal((await firedKeys()).length, 3);
      await rejects(s.q.runSchedule('minutely', globex), ErrorCode.NotFound);
      await rejects(s.q.runSchedule('hourly', acme), ErrorCode.NotFound);
      assert.equal((await firedKeys(globex)).length, 0);
    });

    it("keeps a tenant's schedules out of another tenant's sight and reach", async () => {
      await s.q.createSchedule(every('nightly', 60), acme);
      await rejects(s.q.getSchedule('nightly', globex), ErrorCode.NotFound);
      await rejects(s.q.updateSchedule('nightly', { paused: true }, globex), ErrorCode.NotFound);
      await rejects(s.q.deleteSchedule('nightly', globex), ErrorCode.NotFound);
      assert.deepEqual((await s.q.listSchedules({ scope: globex })).schedules, []);
      await s.q.createSchedule(every('nightly', 120), globex);
      s.h.clock.advanceSeconds(60);
      await s.q.scheduler.tick();
      assert.equal((await firedKeys(acme)).length, 1, "acme's schedule enqueues in acme");
      assert.equal((await firedKeys(globex)).length, 0);
      assert.equal((await s.q.getSchedule('nightly', acme)).paused, false);
      assert.equal((await s.q.listSchedules()).schedules.length, 2, 'an operator sees both');
    });
  });
}
