/**
 * An abort whose AbortController is made only when someone reads `signal`:
 * most jobs' handlers and most calls' handlers never do, and one per job was a
 * measurable share of an in-process no-op job's cost (aborting one builds a
 * DOMException with a stack). An abort before the signal is read is
 * remembered and applied when it is made.
 */
export class LazyAbort {
  private controller: AbortController | null = null;
  private listeners: (() => void)[] = [];
  aborted = false;
  reason: unknown = undefined;

  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
    for (const listener of this.listeners.splice(0)) listener();
  }

  onAbort(listener: () => void): void {
    if (this.aborted) listener();
    else this.listeners.push(listener);
  }

  offAbort(listener: () => void): void {
    this.listeners = this.listeners.filter((l) => l !== listener);
  }
}
