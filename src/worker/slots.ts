/**
 * The worker's slots: at most `concurrency` handlers run at once, a task with a concurrency of
 * its own at most that many of its kind, and leased jobs that find no free slot (prefetched, or
 * held back by their task's limit) wait here in lease order for one.
 */
import type { LazyAbort } from '../util/lazy-abort.ts';
import type { TaskHandler } from './handler.ts';

/** A job whose handler holds one of the `concurrency` slots. */
export interface Held {
  readonly abort: LazyAbort;
  /** The task whose handler runs it, if any: it holds one of that task's slots too. */
  readonly task: TaskHandler | undefined;
  /** Give up on the handler (close timed out): abort its signal and hand its job back. */
  abandon(reason: Error): void;
}

/** A leased job waiting for a slot (prefetched). */
export interface Waiting {
  readonly task: TaskHandler | undefined;
  start(): void;
  /** The worker is closing: give the job back unstarted, starting the release now. */
  release(): void;
}

export class Slots {
  /** Jobs whose handler is running: each holds one of the `concurrency` slots. */
  private readonly runningJobs = new Map<string, Held>();
  /** Leased jobs waiting for a slot (prefetched), in lease order. */
  private readonly waitingJobs: Waiting[] = [];
  /** Running jobs per task with a concurrency of its own, by kind. */
  private readonly taskRunning = new Map<string, number>();

  constructor(private readonly concurrency: number) {}

  /** Jobs whose handler runs now. */
  get running(): number {
    return this.runningJobs.size;
  }

  /** Jobs leased and waiting for a slot. */
  get waiting(): number {
    return this.waitingJobs.length;
  }

  /** Waiting jobs held back by their task's limit, not the worker's. */
  blocked(): number {
    return this.waitingJobs.filter((w) => !this.taskFree(w.task)).length;
  }

  /** The worker is closing: hand back every waiting job unstarted. */
  releaseWaiting(): void {
    for (const job of this.waitingJobs.splice(0)) job.release();
  }

  /** Give up on every running handler (close timed out). */
  abandonRunning(reason: Error): void {
    for (const held of [...this.runningJobs.values()]) held.abandon(reason);
  }

  /**
   * Take a slot for a job: at once if one is free, else when one frees up.
   * `'dropped'` if the job's lease was lost first, `'released'` if the
   * worker began to close first (then `release` has been called).
   */
  take(jobId: string, held: Held, release: () => void): Promise<'run' | 'dropped' | 'released'> {
    if (this.canStart(held.task) && !this.waitingJobs.some((w) => this.canStart(w.task))) {
      this.occupy(jobId, held);
      return Promise.resolve('run');
    }
    return new Promise((resolve) => {
      const entry: Waiting = {
        task: held.task,
        start: () => {
          held.abort.offAbort(dropped);
          this.occupy(jobId, held);
          resolve('run');
        },
        release: () => {
          held.abort.offAbort(dropped);
          release();
          resolve('released');
        },
      };
      const dropped = (): void => {
        const at = this.waitingJobs.indexOf(entry);
        if (at >= 0) this.waitingJobs.splice(at, 1);
        resolve('dropped');
      };
      held.abort.onAbort(dropped);
      this.waitingJobs.push(entry);
    });
  }

  /** Hand freed slots to prefetched jobs, oldest lease first, skipping those whose task is at its limit. */
  startWaiting(): void {
    for (let at = 0; at < this.waitingJobs.length && this.runningJobs.size < this.concurrency;) {
      const next = this.waitingJobs[at] as Waiting;
      if (!this.taskFree(next.task)) {
        at++;
        continue;
      }
      this.waitingJobs.splice(at, 1);
      next.start();
    }
  }

  /** Whether the task (if any) has a slot of its own free. */
  private taskFree(task: TaskHandler | undefined): boolean {
    return task?.concurrency === undefined || (this.taskRunning.get(task.kind) ?? 0) < task.concurrency;
  }

  private canStart(task: TaskHandler | undefined): boolean {
    return this.runningJobs.size < this.concurrency && this.taskFree(task);
  }

  private occupy(jobId: string, held: Held): void {
    this.runningJobs.set(jobId, held);
    if (held.task?.concurrency !== undefined)
      this.taskRunning.set(held.task.kind, (this.taskRunning.get(held.task.kind) ?? 0) + 1);
  }

  /** Free a running job's slots (the worker's and its task's); `false` if it held none. */
  vacate(jobId: string): boolean {
    const held = this.runningJobs.get(jobId);
    if (held === undefined) return false;
    this.runningJobs.delete(jobId);
    if (held.task?.concurrency !== undefined)
      this.taskRunning.set(held.task.kind, (this.taskRunning.get(held.task.kind) ?? 1) - 1);
    return true;
  }
}
