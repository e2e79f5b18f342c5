/**
 * Loaded into every test file's process (`--import` in `npm test`). Once a file's tests are done,
 * its process should exit as soon as its event loop empties. If something the tests opened is
 * still open a minute later (a socket, a timer, a child process), this names each one and ends
 * the process with a failure, instead of it idling until the runner's timeout with nothing said.
 */
import { after } from 'node:test';

/**
 * Timers are not among `process._getActiveHandles()`: note where each was set, so a leaked one
 * can be named. One captured stack per timer, dropped when it fires (once) or is cleared.
 */
const timers = new Map<NodeJS.Timeout, { origin: Error; callback: (...args: unknown[]) => void }>();
const { setTimeout: originalSetTimeout, setInterval: originalSetInterval } = globalThis;
const { clearTimeout: originalClearTimeout, clearInterval: originalClearInterval } = globalThis;
type Schedule = (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => NodeJS.Timeout;
function tracked(schedule: Schedule, once: boolean): Schedule {
  const wrapped: Schedule = (callback, ms, ...args) => {
    const origin = new Error('set here');
    const timer = schedule(
      (...given) => {
        if (once) timers.delete(timer);
        callback(...given);
      },
      ms,
      ...args,
    );
    timers.set(timer, { origin, callback });
    return timer;
  };
  // Keeps what hangs off the original, such as its util.promisify form.
  return Object.assign(wrapped, schedule);
}
globalThis.setTimeout = tracked(originalSetTimeout, true) as typeof setTimeout;
globalThis.setInterval = tracked(originalSetInterval, false) as typeof setInterval;
globalThis.clearTimeout = (timer) => {
  timers.delete(timer as NodeJS.Timeout);
  originalClearTimeout(timer);
};
globalThis.clearInterval = (timer) => {
  timers.delete(timer as NodeJS.Timeout);
  originalClearInterval(timer);
};

const GRACE_MS = Number(process.env.TELHA_TEST_EXIT_GRACE_MS ?? 60_000);

after(() => {
  setTimeout(() => {
    process.stderr.write(`test file still running ${GRACE_MS / 1000} s after its tests ended; open:\n`);
    for (const line of openHandles()) process.stderr.write(`  ${line}\n`);
    process.exit(1);
  }, GRACE_MS).unref();
});

/** What keeps the event loop alive, each described by what it is connected to or will run. */
function openHandles(): string[] {
  const internals = process as unknown as { _getActiveHandles?: () => unknown[]; _getActiveRequests?: () => unknown[] };
  const handles = internals._getActiveHandles?.() ?? [];
  const requests = internals._getActiveRequests?.() ?? [];
  return [
    `resources: ${process.getActiveResourcesInfo().join(', ')}`,
    ...handles.map(describe),
    ...requests.map((request) => `request ${constructorName(request)}`),
    ...[...timers]
      .filter(([timer]) => timer.hasRef())
      .map(([timer, { origin, callback }]) => {
        const when = (timer as unknown as { _repeat: unknown })._repeat === null ? 'after' : 'every';
        const ms = String((timer as unknown as { _idleTimeout: unknown })._idleTimeout);
        const body = callback.toString().replace(/\s+/g, ' ').slice(0, 160);
        const stack = origin.stack?.split('\n').slice(2, 9).join('\n') ?? '';
        return `timer ${when} ${ms} ms: ${callback.name || 'anonymous'} ${body}\n${stack}`;
      }),
  ];
}

function describe(handle: unknown): string {
  const name = constructorName(handle);
  const fields = handle as Record<string, unknown>;
  if (name === 'Socket' || name === 'TLSSocket') {
    const socket = fields as { remoteAddress?: string; remotePort?: number; localPort?: number; destroyed?: boolean };
    // The runner's own pipes to this process (stdio) have no address.
    return `${name} ${socket.remoteAddress ?? 'pipe'}:${socket.remotePort ?? ''} local ${socket.localPort ?? ''}${socket.destroyed === true ? ' (destroyed)' : ''}`;
  }
  if (name === 'ChildProcess') return `ChildProcess pid ${String(fields.pid)} ${String(fields.spawnfile)}`;
  if (name === 'Server')
    return `Server listening on ${JSON.stringify((fields as { address?: () => unknown }).address?.())}`;
  return name;
}

function constructorName(value: unknown): string {
  return (value as { constructor?: { name?: string } } | null)?.constructor?.name ?? typeof value;
}
