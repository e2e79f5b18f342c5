/**
 * Waiting on what a queue says it did (`queue.events`) instead of polling it:
 * subscribe first, then cause the writes, then await. Each wait fails after a
 * minute, naming what it waited for, rather than hanging the run.
 */
import type { JobRecord } from '../../src/core/types.ts';
import type { QueueEvents } from '../../src/engine/observers.ts';
import type { Queue } from '../../src/engine/queue.ts';

const GIVE_UP_MS = 60_000;

/** Resolves once `heard` returns true for an event of `queue`; listening starts with the call. */
function until<E extends keyof QueueEvents>(
  queue: Queue,
  event: E,
  what: () => string,
  heard: (...args: QueueEvents[E]) => boolean,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const emitter = queue.events as unknown as NodeJS.EventEmitter;
    const listener = (...args: QueueEvents[E]): void => {
      if (!heard(...args)) return;
      done();
      resolve();
    };
    const done = (): void => {
      clearTimeout(timer);
      emitter.off(event, listener as (...args: unknown[]) => void);
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`timed out waiting for ${what()}`));
    }, GIVE_UP_MS);
    emitter.on(event, listener as (...args: unknown[]) => void);
  });
}

/** The distinct jobs, `count` of them, whose records a write of `queue` left matching `match`. */
export async function written(
  queue: Queue,
  what: string,
  match: (record: JobRecord) => boolean,
  count = 1,
): Promise<JobRecord[]> {
  const found = new Map<string, JobRecord>();
  await until(
    queue,
    'transition',
    () => `${what} (saw ${found.size} of ${count})`,
    ({ records }) => {
      for (const record of records) if (match(record)) found.set(record.jobId, record);
      return found.size >= count;
    },
  );
  return [...found.values()];
}

/** The next `count` times lease calls on `queue` start to wait for work. */
export function parked(queue: Queue, count = 1): Promise<void> {
  let seen = 0;
  return until(
    queue,
    'parked',
    () => `${count} lease calls to park (saw ${seen})`,
    () => ++seen >= count,
  );
}

/** The transition a record's newest event records. */
export function lastTransition(record: JobRecord): JobRecord['events'][number]['transition'] | undefined {
  return record.events[record.events.length - 1]?.transition;
}
