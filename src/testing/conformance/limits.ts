/** Conformance cases: per-kind concurrency and rate limits (`core/kind-limits.ts`). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scopeOfTenant } from '../../codec/keys.ts';
import { ANY_SCOPE, JobState, SYSTEM_SCOPE, tenantScope, type JobRecord, type ScopeFilter } from '../../core/types.ts';
import { acme, ErrorCode, globex, rejects, type Suite } from './context.ts';
import { fenceOf } from './harness.ts';

function labels(jobs: readonly JobRecord[]): string[] {
  return jobs.map((job) => Buffer.from(job.payload).toString());
}

async function leaseMany(
  s: Suite,
  scope: ScopeFilter = ANY_SCOPE,
  kinds?: string[],
  limit = 100,
): Promise<JobRecord[]> {
  return s.q.lease({ workerId: 'w1', scope, limit, ...(kinds ? { kinds } : {}) });
}

/** Enqueue one job per `kind:label` pair in `scope`, payload the label. */
async function put(s: Suite, scope: typeof acme, jobs: readonly [kind: string, label: string][]): Promise<void> {
  await s.q.enqueueBatch(
    jobs.map(([kind, payload]) => ({ kind, payload })),
    scope,
  );
}

/** A lease long-poll, once it is parked (its promise wrapped, so awaiting this does not await the lease). */
async function parkedLease(s: Suite, kinds?: string[]): Promise<{ readonly leased: Promise<JobRecord[]> }> {
  const leased = s.q.lease({ workerId: 'w2', waitMs: 600_000, ...(kinds ? { kinds } : {}) });
  while (s.q.waits.parked === 0) await new Promise((resolve) => setImmediate(resolve));
  return { leased };
}

export function limitCases(s: Suite): void {
  describe('kind limits', () => {
    it('leases at most N of a limited prefix in one claim, the rest of the claim unlimited', async () => {
      await put(s, acme, [
        ['email', 'e0'],
        ['email.bulk', 'e1'],
        ['report', 'r0'],
        ['email', 'e2'],
        ['report', 'r1'],
      ]);
      await s.q.setKindLimit({ kindPrefix: 'email', concurrency: 2 });
      assert.deepEqual(labels(await leaseMany(s)), ['e0', 'e1', 'r0', 'r1']);
      assert.deepEqual(await leaseMany(s), []);
    });

    it('leases at most N across many claims, scopes and workers', async () => {
      await put(s, acme, [
        ['email', 'a0'],
        ['email', 'a1'],
      ]);
      await put(s, globex, [
        ['email', 'g0'],
        ['email', 'g1'],
      ]);
      await s.q.setKindLimit({ kindPrefix: 'email', concurrency: 3 });
      const taken: JobRecord[] = [];
      for (const [scope, worker] of [
        [acme, 'w1'],
        [globex, 'w2'],
        [ANY_SCOPE, 'w3'],
        [acme, 'w4'],
        [ANY_SCOPE, 'w5'],
      ] as const) {
        const job = await s.q.leaseNext({ workerId: worker, scope });
        if (job !== null) taken.push(job);
      }
      assert.equal(taken.length, 3);
      const [limit] = await s.q.kindLimits();
      assert.equal(limit?.leased, 3);
      // Many claims at once still take no more than the room.
      const more = await Promise.all(Array.from({ length: 4 }, () => s.q.leaseNext({ workerId: 'w6' })));
      assert.deepEqual(
        more.filter((j) => j !== null),
        [],
      );
    });

    it('frees a lane when a job completes, fails, is released, reaped or cancelled', async () => {
      await put(
        s,
        acme,
        Array.from({ length: 6 }, (_, i) => ['k', `k${i}`] as [string, string]),
      );
      await s.q.setKindLimit({ kindPrefix: 'k', concurrency: 1 });
      const next = async (): Promise<JobRecord> => {
        const [job, ...rest] = await leaseMany(s, acme);
        assert.ok(job !== undefined && rest.length === 0, 'one job, the lane’s whole room');
        assert.deepEqual(await leaseMany(s, acme), [], 'the lane is full');
        return job;
      };
      let job = await next();
      await s.q.complete(job.jobId, fenceOf(job));
      job = await next();
      await s.q.fail(job.jobId, fenceOf(job), { error: 'boom', permanent: true });
      job = await next();
      await s.q.release(job.jobId, fenceOf(job));
      job = await next();
      await s.q.cancel(job.jobId);
      job = await next();
      await s.expireAndReap();
      assert.equal((await s.q.show(job.jobId)).state === JobState.Leased, false);
      job = await next();
      assert.equal(job.state, JobState.Leased);
    });

    it('wakes a parked lease call when its lane frees', async () => {
      await put(s, acme, [
        ['k', 'k0'],
        ['k', 'k1'],
      ]);
      await s.q.setKindLimit({ kindPrefix: 'k', concurrency: 1 });
      const [first, ...others] = await leaseMany(s);
      assert.ok(first);
      assert.equal(others.length, 0);
      const parked = await parkedLease(s, ['k']);
      const woken = s.q.waits.ended.woken;
      await s.q.complete(first.jobId, fenceOf(first));
      assert.deepEqual(labels(await parked.leased), ['k1']);
      assert.equal(s.q.waits.ended.woken, woken + 1, 'woken by the completion, not by its timeout');
    });

    it('spends a token per lease and refills them with the clock, up to the burst', async () => {
      await put(
        s,
        acme,
        Array.from({ length: 8 }, (_, i) => ['sms', `s${i}`] as [string, string]),
      );
      await s.q.setKindLimit({ kindPrefix: 'sms', rate: '2/s' });
      assert.deepEqual(labels(await leaseMany(s)), ['s0', 's1']);
      assert.deepEqual(await leaseMany(s), []);
      // A waiter sleeps until the next whole token, half a second on.
      assert.equal(await s.h.store.nextGateAt(acme, s.now()), s.now() + 500_000);
      s.h.clock.advance(250_000);
      assert.deepEqual(await leaseMany(s), []);
      s.h.clock.advance(250_000);
      assert.deepEqual(labels(await leaseMany(s)), ['s2']);
      s.h.clock.advance(60_000_000);
      // A long idle time refills the burst, no more.
      assert.deepEqual(labels(await leaseMany(s)), ['s3', 's4']);
      assert.equal((await s.q.kindLimits())[0]?.tokens, 0);
    });

    it('applies the concurrency and the rate of one lane together', async () => {
      await put(
        s,
        acme,
        Array.from({ length: 6 }, (_, i) => ['k', `k${i}`] as [string, string]),
      );
      await s.q.setKindLimit({ kindPrefix: 'k', concurrency: 2, rate: { count: 3, periodMs: 1_000 } });
      const first = await leaseMany(s);
      assert.deepEqual(labels(first), ['k0', 'k1']);
      for (const job of first) await s.q.complete(job.jobId, fenceOf(job));
      assert.deepEqual(labels(await leaseMany(s)), ['k2'], 'one token left');
      // Out of tokens, not full: a waiter wakes for the token.
      assert.equal(await s.h.store.nextGateAt(ANY_SCOPE, s.now()), s.now() + 333_334);
    });

    it('skips a full lane in key order, the order of the rest unchanged', async () => {
      await put(s, acme, [
        ['a', 'a0'],
        ['b', 'b0'],
        ['a', 'a1'],
        ['c', 'c0'],
        ['a', 'a2'],
        ['b', 'b1'],
      ]);
      await s.q.setKindLimit({ kindPrefix: 'a', concurrency: 1 });
      assert.deepEqual(labels(await leaseMany(s, acme, undefined, 3)), ['a0', 'b0', 'c0']);
      assert.deepEqual(labels(await leaseMany(s, acme)), ['b1']);
    });

    it('skips a full lane in the fleet’s fair order, passing a tenant with nothing else', async () => {
      const [first, second] = [...['t1', 't2']].sort((a, b) => Buffer.compare(scopeOfTenant(a), scopeOfTenant(b))) as [
        string,
        string,
      ];
      await put(s, tenantScope(first), [
        ['a', `${first}-a0`],
        ['a', `${first}-a1`],
        ['b', `${first}-b0`],
      ]);
      await put(s, tenantScope(second), [
        ['a', `${second}-a0`],
        ['b', `${second}-b0`],
        ['b', `${second}-b1`],
      ]);
      await s.q.setKindLimit({ kindPrefix: 'a', concurrency: 1 });
      assert.deepEqual(labels(await leaseMany(s)), [`${first}-a0`, `${second}-b0`, `${first}-b0`, `${second}-b1`]);
    });

    it('puts a kind in the lane of its longest limit prefix', async () => {
      await put(s, acme, [
        ['email.bulk', 'b0'],
        ['email.bulk', 'b1'],
        ['email.bulk', 'b2'],
        ['email.send', 's0'],
        ['email.send', 's1'],
      ]);
      await s.q.setKindLimit({ kindPrefix: 'email', concurrency: 1 });
      await s.q.setKindLimit({ kindPrefix: 'email.bulk', concurrency: 2 });
      assert.deepEqual(labels(await leaseMany(s)), ['b0', 'b1', 's0']);
      assert.deepEqual(
        (await s.q.kindLimits()).map((l) => [l.kindPrefix, l.leased]),
        [
          ['email', 1],
          ['email.bulk', 2],
        ],
      );
      // Cleared, the longer prefix's kinds fall into the shorter lane, which is full.
      await s.q.clearKindLimit('email.bulk');
      assert.deepEqual(
        (await s.q.kindLimits()).map((l) => [l.kindPrefix, l.leased]),
        [['email', 3]],
      );
      assert.deepEqual(await leaseMany(s), []);
    });

    it('limits system kinds only by a system: prefix', async () => {
      await put(s, SYSTEM_SCOPE, [
        ['system:x', 'x0'],
        ['system:x', 'x1'],
      ]);
      await put(s, acme, [
        ['sync', 'y0'],
        ['sync', 'y1'],
      ]);
      await s.q.setKindLimit({ kindPrefix: 's', concurrency: 1 });
      assert.deepEqual(labels(await leaseMany(s, ANY_SCOPE, ['system:', 's'])), ['x0', 'x1', 'y0']);
      await s.q.clearKindLimit('s');
      await put(s, SYSTEM_SCOPE, [
        ['system:x', 'x2'],
        ['system:x', 'x3'],
      ]);
      await s.q.setKindLimit({ kindPrefix: 'system:', concurrency: 3 });
      assert.deepEqual(labels(await leaseMany(s, ANY_SCOPE, ['system:'])), ['x2']);
    });

    it('lists limits with leased counts and tokens; set replaces, clear removes', async () => {
      await put(s, acme, [
        ['a', 'a0'],
        ['a', 'a1'],
        ['a', 'a2'],
      ]);
      await s.q.setKindLimit({ kindPrefix: 'b', rate: '10/1m', by: 'bob' });
      const set = await s.q.setKindLimit({ kindPrefix: 'a', concurrency: 5, rate: '10/s', by: 'alice' });
      assert.deepEqual(set, {
        kindPrefix: 'a',
        concurrency: 5,
        rate: { count: 10, periodMs: 1_000 },
        setAt: s.now(),
        by: 'alice',
      });
      const leased = await leaseMany(s, acme, undefined, 2);
      assert.deepEqual(await s.q.kindLimits(), [
        { ...set, leased: 2, tokens: 8 },
        {
          kindPrefix: 'b',
          concurrency: null,
          rate: { count: 10, periodMs: 60_000 },
          setAt: s.now(),
          by: 'bob',
          leased: 0,
          tokens: 10,
        },
      ]);
      // Lowered below what is leased: those finish normally, nothing more is leased meanwhile.
      await s.q.setKindLimit({ kindPrefix: 'a', concurrency: 1 });
      assert.deepEqual(await leaseMany(s), []);
      for (const job of leased)
        assert.equal((await s.q.complete(job.jobId, fenceOf(job))).job.state, JobState.Completed);
      assert.deepEqual(labels(await leaseMany(s)), ['a2']);
      await s.q.clearKindLimit('a');
      assert.deepEqual(
        (await s.q.kindLimits()).map((l) => l.kindPrefix),
        ['b'],
      );
      await rejects(s.q.clearKindLimit('a'), ErrorCode.NotFound);
    });

    it('refuses bad limits naming the field, and writes nothing', async () => {
      await s.q.setKindLimit({ kindPrefix: 'ok', concurrency: 1 });
      const before = await s.q.kindLimits();
      const cases: [Parameters<Suite['q']['setKindLimit']>[0], string][] = [
        [{ kindPrefix: 'ok', concurrency: 0 }, 'concurrency'],
        [{ kindPrefix: 'ok', concurrency: -3 }, 'concurrency'],
        [{ kindPrefix: 'ok', concurrency: 1.5 }, 'concurrency'],
        [{ kindPrefix: 'ok', rate: 'many/s' }, 'rate'],
        [{ kindPrefix: 'ok', rate: '0/s' }, 'rate'],
        [{ kindPrefix: 'ok', rate: { count: 0, periodMs: 1_000 } }, 'rate'],
        [{ kindPrefix: '', concurrency: 1 }, 'kind_prefix'],
        [{ kindPrefix: 'x'.repeat(256), concurrency: 1 }, 'kind_prefix'],
        [{ kindPrefix: 'has space', concurrency: 1 }, 'kind_prefix'],
        [{ kindPrefix: 'ok' }, 'concurrency'],
      ];
      for (const [options, field] of cases) {
        await rejects(s.q.setKindLimit(options), ErrorCode.InvalidArgument, (e) => assert.equal(e.field, field));
      }
      await rejects(s.q.clearKindLimit(''), ErrorCode.InvalidArgument);
      assert.deepEqual(await s.q.kindLimits(), before);
    });

    it('refuses a limit past the bound, writing nothing; replacing one is no new limit', async () => {
      const limit = (kindPrefix: string) => ({ kindPrefix, concurrency: 1, rate: null, setAt: s.now(), by: 'test' });
      await s.h.store.setKindLimit(limit('a'), 2);
      await s.h.store.setKindLimit(limit('b'), 2);
      await rejects(s.h.store.setKindLimit(limit('c'), 2), ErrorCode.FailedPrecondition);
      await s.h.store.setKindLimit({ ...limit('b'), concurrency: 7 }, 2);
      assert.deepEqual(
        (await s.h.store.listKindLimits(s.now())).map((l) => [l.kindPrefix, l.concurrency]),
        [
          ['a', 1],
          ['b', 7],
        ],
      );
      // The queue's own bound: 100 in all.
      for (let i = 2; i < 100; i++) await s.q.setKindLimit({ kindPrefix: `p${i}`, concurrency: 1 });
      await rejects(s.q.setKindLimit({ kindPrefix: 'one-more', concurrency: 1 }), ErrorCode.FailedPrecondition);
      assert.equal((await s.q.kindLimits()).length, 100);
    });

    it('seeds the limits of [jobs.kinds] at open, by config', async () => {
      await s.withHarness({
        config: { jobs: { kinds: { email: { concurrency: 1, rate: '5/s' }, other: { max_attempts: 3 } } } },
      });
      const [limit, ...rest] = await s.q.kindLimits();
      assert.deepEqual(rest, []);
      assert.ok(limit);
      assert.equal(limit.kindPrefix, 'email');
      assert.equal(limit.by, 'config');
      assert.equal(limit.concurrency, 1);
      assert.deepEqual(limit.rate, { count: 5, periodMs: 1_000 });
      await put(s, acme, [
        ['email', 'e0'],
        ['email', 'e1'],
      ]);
      assert.deepEqual(labels(await leaseMany(s)), ['e0']);
    });
  });
}
