import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import {
  applyChanges,
  draftSchedule,
  fire,
  firingKey,
  nextDue,
  type NewSchedule,
  type Schedule,
} from '../../src/core/schedules.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { MAX_SCHEDULES_PER_SCOPE } from '../../src/core/bounds.ts';
import { tenantScope } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { MemoryJobStore } from '../../src/storage/memory/memory-store.ts';

const acme = tenantScope('acme');
const at = (iso: string): number => Date.parse(iso) * 1000;
const iso = (micros: number | null): string => new Date((micros ?? 0) / 1000).toISOString();
const context = (now: number) => ({ now, maxPayloadBytes: 1024 });
const JOB_ID = '01900000-0000-7000-8000-000000000001';

function cron(expression: string, timezone: string, now: number): Schedule {
  return draftSchedule(acme, { name: 's', cron: expression, timezone, job: { kind: 'k' } }, context(now));
}

function refusedField(input: NewSchedule): string | undefined {
  try {
    draftSchedule(acme, input, context(at('2026-01-01T00:00:00Z')));
  } catch (error) {
    assert.ok(error instanceof TelhaError);
    assert.equal(error.code, ErrorCode.InvalidArgument);
    return error.field;
  }
  assert.fail('expected a refusal');
}

describe('schedules (core)', () => {
  it('fires a daily 02:00 in Berlin at 03:00 CEST on the spring-forward day, when 02:00 does not exist', () => {
    const s = cron('0 2 * * *', 'Europe/Berlin', at('2026-03-28T12:00:00Z'));
    assert.equal(iso(s.nextDueAt), '2026-03-29T01:00:00.000Z', '03:00 CEST, the first instant after the gap');
    assert.equal(iso(nextDue(s, s.nextDueAt ?? 0)), '2026-03-30T00:00:00.000Z', '02:00 CEST the next day');
  });

  it('fires a daily 02:30 in Berlin once on the fall-back day, at its first occurrence', () => {
    const s = cron('30 2 * * *', 'Europe/Berlin', at('2026-10-24T12:00:00Z'));
    assert.equal(iso(s.nextDueAt), '2026-10-25T00:30:00.000Z', '02:30 CEST');
    // Not 01:30Z (02:30 CET, the repeated hour): once a day.
    assert.equal(iso(nextDue(s, s.nextDueAt ?? 0)), '2026-10-26T01:30:00.000Z');
  });

  it('fires an every-30-minutes cron at both occurrences of the repeated hour, each under its own key', () => {
    let s = cron('*/30 * * * *', 'Europe/Berlin', at('2026-10-25T00:10:00Z'));
    const keys: string[] = [];
    for (const now of ['00:30', '01:00', '01:30', '02:00'].map((t) => at(`2026-10-25T${t}:00Z`))) {
      const firing = fire(s, now, JOB_ID);
      assert.ok(firing);
      keys.push(firing.draft.idempotencyKey ?? '');
      s = firing.next;
    }
    assert.deepEqual(keys, [
      'schedule:s@2026-10-25T00:30:00.000Z',
      'schedule:s@2026-10-25T01:00:00.000Z',
      'schedule:s@2026-10-25T01:30:00.000Z',
      'schedule:s@2026-10-25T02:00:00.000Z',
    ]);
  });

  it('catches up with one firing for the latest missed due time, and is due next after now', () => {
    const start = at('2026-01-01T00:00:00Z');
    const s = draftSchedule(acme, { name: 'm', everySecs: 60, job: { kind: 'k' } }, context(start));
    const later = start + (3 * 3_600 + 45) * 1_000_000;
    const firing = fire(s, later, JOB_ID);
    assert.equal(firing?.draft.idempotencyKey, firingKey('m', start + 180 * 60_000_000));
    assert.equal(firing.next.lastDueAt, start + 180 * 60_000_000);
    assert.equal(firing.next.nextDueAt, start + 181 * 60_000_000);
    assert.equal(fire(firing.next, later, JOB_ID), null, 'not due again at the same time');
    const c = cron('0 * * * *', 'UTC', start);
    assert.equal(
      fire(c, at('2026-01-01T05:00:00Z'), JOB_ID)?.draft.idempotencyKey,
      'schedule:s@2026-01-01T05:00:00.000Z',
    );
  });

  it('does not fire a paused schedule, and a resumed one is due after now', () => {
    const start = at('2026-01-01T00:00:00Z');
    const s = draftSchedule(acme, { name: 'm', everySecs: 60, job: { kind: 'k' }, paused: true }, context(start));
    assert.equal(s.nextDueAt, null);
    assert.equal(fire(s, start + 3_600_000_000, JOB_ID), null);
    const resumed = applyChanges(s, { paused: false }, context(start + 3_630_000_000));
    assert.equal(resumed.nextDueAt, start + 61 * 60_000_000);
  });

  it('refuses a bad expression, time zone, name or job template, naming the field', () => {
    assert.equal(refusedField({ name: 's', cron: '* * *', job: { kind: 'k' } }), 'cron');
    assert.equal(refusedField({ name: 's', cron: '61 * * * *', job: { kind: 'k' } }), 'cron');
    // croner reads a seventh field as the year; the wire API promises 5, or 6 with seconds first.
    assert.equal(cron('15 30 2 * * *', 'UTC', at('2026-01-01T00:00:00Z')).cron, '15 30 2 * * *');
    assert.equal(refusedField({ name: 's', cron: '* * * * * * *', job: { kind: 'k' } }), 'cron');
    assert.equal(refusedField({ name: 's', cron: '0 0 0 1 1 * 2030', job: { kind: 'k' } }), 'cron');
    assert.equal(
      refusedField({ name: 's', cron: '0 * * * *', timezone: 'Mars/Olympus', job: { kind: 'k' } }),
      'timezone',
    );
    assert.equal(refusedField({ name: '', everySecs: 1, job: { kind: 'k' } }), 'name');
    assert.equal(refusedField({ name: 'n'.repeat(129), everySecs: 1, job: { kind: 'k' } }), 'name');
    assert.equal(refusedField({ name: 's', everySecs: 1.5, job: { kind: 'k' } }), 'every_secs');
    assert.equal(
      refusedField({ name: 's', everySecs: 1, job: { kind: 'k', payload: 'x'.repeat(2048) } }),
      'job.payload',
    );
    assert.equal(
      refusedField({ name: 's', everySecs: 1, job: { kind: 'k', delayMs: 5 } as NewSchedule['job'] }),
      'job.delay_ms',
    );
  });

  it('fires each due time at most once, in order, never ahead of the clock, whatever the steps between passes', () => {
    const zones = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata'];
    const expressions = ['*/30 * * * *', '0 2 * * *', '30 2 * * *', '15 1,2,3 * * 0', '0 0 1 * *'];
    fc.assert(
      fc.property(
        fc.oneof(
          fc.record({ everySecs: fc.integer({ min: 1, max: 86_400 }) }),
          fc.record({ cron: fc.constantFrom(...expressions), timezone: fc.constantFrom(...zones) }),
        ),
        fc.array(fc.integer({ min: 0, max: 3 * 86_400 }), { minLength: 1, maxLength: 30 }),
        (timing, steps) => {
          // Around the 2026 fall-back in Europe and the spring-forward in Australia.
          let now = at('2026-10-03T00:00:00Z');
          let s = draftSchedule(acme, { name: 'p', ...timing, job: { kind: 'k' } }, context(now));
          const fired: number[] = [];
          for (const step of steps) {
            now += step * 1_000_000;
            const firing = fire(s, now, JOB_ID);
            if (firing === null) {
              assert.ok(s.nextDueAt === null || s.nextDueAt > now, 'a due schedule fires');
              continue;
            }
            const due = firing.next.lastDueAt ?? -1;
            assert.ok(due <= now, 'never ahead of the clock');
            const after = nextDue(s, due);
            assert.ok(after === null || after > now, 'the latest due time passed: one job for all missed');
            assert.ok(fired.length === 0 || due > (fired.at(-1) ?? 0), 'each due time once, in order');
            assert.equal(firing.draft.idempotencyKey, firingKey('p', due));
            assert.ok(firing.next.nextDueAt === null || firing.next.nextDueAt > now, 'due next after now');
            fired.push(due);
            s = firing.next;
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('holds a scope to MAX_SCHEDULES_PER_SCOPE (1,000) schedules through the queue', async () => {
    const queue = new Queue({ store: new MemoryJobStore(), clock: new ManualClock(), services: false });
    try {
      assert.equal(MAX_SCHEDULES_PER_SCOPE, 1_000);
      for (let i = 0; i < MAX_SCHEDULES_PER_SCOPE; i++) {
        await queue.createSchedule({ name: `s${i}`, everySecs: 60, job: { kind: 'k' } }, acme);
      }
      await assert.rejects(queue.createSchedule({ name: 'one-more', everySecs: 60, job: { kind: 'k' } }, acme), {
        code: ErrorCode.FailedPrecondition,
        message: /1000 schedules/,
      });
      await queue.createSchedule({ name: 'one-more', everySecs: 60, job: { kind: 'k' } }, tenantScope('globex'));
    } finally {
      await queue.close();
    }
  });
});
