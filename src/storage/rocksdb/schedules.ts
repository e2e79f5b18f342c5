/**
 * Schedules of a RocksDB store: rows in the `default` column with a due index beside them
 * (`codec/schedules.ts`), each changed under its own lock (creates also under their scope's, so
 * the count holds). A schedule fires as one atomic unit with the job it enqueues.
 */
import { CorruptRecordError, notFound } from '../../core/errors.ts';
import {
  scheduleExists,
  scheduleInScope,
  tooManySchedules,
  type Schedule,
  type ScheduleFiring,
} from '../../core/schedules.ts';
import type { JobDraft } from '../../core/drafts.ts';
import type { Micros, QueueScope } from '../../core/types.ts';
import { prefixUpperBound } from '../../codec/keys.ts';
import {
  decodeSchedule,
  dueOfDueKey,
  encodeSchedule,
  scheduleDueBound,
  scheduleDueKey,
  scheduleKey,
  scheduleKeyOfDue,
  schedulePageKey,
  schedulePageToken,
  SCHEDULE_DUE_PREFIX,
  SCHEDULE_PREFIX,
  scheduleScopePrefix,
} from '../../codec/schedules.ts';
import type { FiredSchedule, InsertOutcome, SchedulePage, ScheduleQuery } from '../types.ts';
import type { RocksContext } from './context.ts';
import type { WriteOp } from './database.ts';

/**
 * Enqueue `draft` in one atomic unit with the ops `more` adds (a schedule's move): the store's
 * insert, under the draft's idempotency lock. `undefined` when nothing was created.
 */
export type InsertWith = (
  draft: JobDraft,
  now: Micros,
  more: (ops: WriteOp[]) => void,
) => Promise<InsertOutcome | undefined>;

/** The store's schedules. */
export class Schedules {
  constructor(
    private readonly ctx: RocksContext,
    private readonly insertWith: InsertWith,
  ) {}

  async createSchedule(schedule: Schedule, maxPerScope: number): Promise<void> {
    this.ctx.assertOpen();
    const key = scheduleKey(schedule.scope, schedule.name);
    const scopePrefix = scheduleScopePrefix(schedule.scope);
    // The scope's lock too, so two creates at once cannot both take the last free place.
    const release = await this.ctx.locks.acquire([scheduleLock(key), `schedules:${scopePrefix.toString('hex')}`]);
    try {
      if (this.loadSchedule(key) !== null) throw scheduleExists(schedule.name);
      let held = 0;
      const lt = prefixUpperBound(scopePrefix) ?? undefined;
      const range = { gte: scopePrefix, ...(lt ? { lt } : {}), limit: maxPerScope };
      for await (const entry of this.ctx.db.scan(this.ctx.cf.meta, range)) if (entry.length > 0) held++;
      if (held >= maxPerScope) throw tooManySchedules(maxPerScope);
      const ops: WriteOp[] = [];
      this.stageSchedule(ops, key, null, schedule);
      await this.ctx.committer.stage(ops);
    } finally {
      release();
    }
  }

  async updateSchedule(scope: QueueScope, name: string, change: (current: Schedule) => Schedule): Promise<Schedule> {
    this.ctx.assertOpen();
    const key = scheduleKey(scope, name);
    const release = await this.ctx.locks.acquire([scheduleLock(key)]);
    try {
      const current = this.loadSchedule(key);
      if (current === null) throw notFound(`schedule ${name}`);
      const next = change(current);
      const ops: WriteOp[] = [];
      this.stageSchedule(ops, key, current, next);
      await this.ctx.committer.stage(ops);
      return next;
    } finally {
      release();
    }
  }

  getSchedule(scope: QueueScope, name: string): Promise<Schedule | null> {
    this.ctx.assertOpen();
    return Promise.resolve(this.loadSchedule(scheduleKey(scope, name)));
  }

  async listSchedules(query: ScheduleQuery): Promise<SchedulePage> {
    this.ctx.assertOpen();
    const prefix = query.scope.type === 'any' ? SCHEDULE_PREFIX : scheduleScopePrefix(query.scope);
    const after = query.pageToken === null ? null : Buffer.concat([SCHEDULE_PREFIX, schedulePageKey(query.pageToken)]);
    const lt = prefixUpperBound(prefix) ?? undefined;
    const start = after !== null && Buffer.compare(after, prefix) >= 0 ? { gt: after } : { gte: prefix };
    const schedules: Schedule[] = [];
    let more = false;
    for await (const [key, value] of this.ctx.db.scan(this.ctx.cf.meta, { ...start, ...(lt ? { lt } : {}) })) {
      const schedule = this.decodeScheduleOrSkip(key, value);
      if (schedule === null || !scheduleInScope(schedule, query.scope)) continue;
      if (schedules.length === query.limit) {
        more = true;
        break;
      }
      schedules.push(schedule);
    }
    const last = schedules[schedules.length - 1];
    return { schedules, nextPageToken: more && last !== undefined ? schedulePageToken(last) : null };
  }

  async deleteSchedule(scope: QueueScope, name: string): Promise<boolean> {
    this.ctx.assertOpen();
    const key = scheduleKey(scope, name);
    const release = await this.ctx.locks.acquire([scheduleLock(key)]);
    try {
      const current = this.loadSchedule(key);
      if (current === null) return false;
      const ops: WriteOp[] = [];
      this.stageSchedule(ops, key, current, null);
      await this.ctx.committer.stage(ops);
      return true;
    } finally {
      release();
    }
  }

  async fireDueSchedules(
    now: Micros,
    limit: number,
    fire: (schedule: Schedule) => ScheduleFiring | null,
  ): Promise<FiredSchedule[]> {
    this.ctx.assertOpen();
    const dueKeys: Buffer[] = [];
    for await (const [dueKey] of this.ctx.db.scan(this.ctx.cf.meta, {
      gte: SCHEDULE_DUE_PREFIX,
      lt: scheduleDueBound(now),
      limit,
    })) {
      dueKeys.push(dueKey);
    }
    // Each schedule is its own atomic unit; staged together, group commit writes them at once.
    const fired = await Promise.all(dueKeys.map((dueKey) => this.fireOne(dueKey, now, fire)));
    return fired.filter((f): f is FiredSchedule => f !== null);
  }

  private async fireOne(
    dueKey: Buffer,
    now: Micros,
    fire: (schedule: Schedule) => ScheduleFiring | null,
  ): Promise<FiredSchedule | null> {
    const key = scheduleKeyOfDue(dueKey);
    const release = await this.ctx.locks.acquire([scheduleLock(key)]);
    try {
      const [value] = this.ctx.db.getManySync(this.ctx.cf.meta, [key]);
      // A row that does not decode is counted and logged, and left for an operator: it must not stop the others firing.
      const current = value === undefined ? null : this.decodeScheduleOrSkip(key, value);
      // Changed since the scan (fired, paused, retimed or deleted): its own write moved the index.
      if (current === null || current.paused || current.nextDueAt !== dueOfDueKey(dueKey)) return null;
      const firing = fire(current);
      if (firing === null) return null;
      const job = await this.insertWith(firing.draft, now, (ops) => this.stageSchedule(ops, key, current, firing.next));
      return job === undefined ? null : { schedule: firing.next, job };
    } finally {
      release();
    }
  }

  /** The ops of one schedule's move from `before` to `after` (either `null` for none): its row and due-index entry. */
  private stageSchedule(ops: WriteOp[], key: Buffer, before: Schedule | null, after: Schedule | null): void {
    const dueBefore = before === null ? null : dueKeyOf(before);
    const dueAfter = after === null ? null : dueKeyOf(after);
    if (dueBefore !== null && (dueAfter === null || !dueBefore.equals(dueAfter))) {
      ops.push({ column: this.ctx.cf.meta, key: dueBefore, value: null });
    }
    if (dueAfter !== null) ops.push({ column: this.ctx.cf.meta, key: dueAfter, value: Buffer.alloc(0) });
    ops.push({ column: this.ctx.cf.meta, key, value: after === null ? null : encodeSchedule(after) });
  }

  private loadSchedule(key: Buffer): Schedule | null {
    const [value] = this.ctx.db.getManySync(this.ctx.cf.meta, [key]);
    return value === undefined ? null : decodeSchedule(value, key.toString('hex'));
  }

  private decodeScheduleOrSkip(key: Buffer, value: Buffer): Schedule | null {
    try {
      return decodeSchedule(value, key.toString('hex'));
    } catch (error) {
      if (!(error instanceof CorruptRecordError)) throw error;
      this.ctx.corruptRows++;
      this.ctx.logger.warn({ key: error.key, err: error.message }, 'skipping corrupt schedule row');
      return null;
    }
  }
}

function scheduleLock(key: Buffer): string {
  return `schedule:${key.toString('hex')}`;
}

/** A schedule's due-index key, or `null` when it is not waiting to fire. */
function dueKeyOf(schedule: Schedule): Buffer | null {
  return schedule.paused || schedule.nextDueAt === null
    ? null
    : scheduleDueKey(schedule.nextDueAt, schedule.scope, schedule.name);
}
