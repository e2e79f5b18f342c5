/**
 * The lifecycle every background service shares (reaper, maintenance): an
 * idempotent `start()`, a `stop()` that tolerates a second call and waits for
 * a running pass, and `runOnce()` so tests drive a pass without timers.
 */
import type { Logger } from '../core/logger.ts';

export class PeriodicService {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private started = false;

  constructor(
    readonly name: string,
    private readonly intervalMs: number,
    private readonly pass: () => Promise<void>,
    private readonly logger: Logger,
  ) {}

  get isRunning(): boolean {
    return this.started;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.schedule();
  }

  /** One pass now; concurrent calls share the pass in flight. */
  runOnce(): Promise<void> {
    this.running ??= this.pass()
      .catch((error: unknown) => {
        this.logger.error(
          { service: this.name, err: error instanceof Error ? error.message : String(error) },
          'background pass failed',
        );
      })
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  async stop(): Promise<void> {
    this.started = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private schedule(): void {
    if (!this.started) return;
    this.timer = setTimeout(() => {
      void this.runOnce().then(() => this.schedule());
    }, this.intervalMs);
    // A forgotten service must not keep the process alive on its own.
    this.timer.unref();
  }
}
