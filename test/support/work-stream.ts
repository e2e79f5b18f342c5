/** A Work stream opened with the SDK's low-level channel, recording what the server pushes. */
import type { TelhaClient } from '../../src/client/client.ts';
import type { RemoteJob } from '../../src/client/convert.ts';
import type { WorkChannel } from '../../src/client/work-channel.ts';

export interface OpenedWork {
  readonly channel: WorkChannel;
  /** Every job pushed so far, in arrival order. */
  readonly jobs: RemoteJob[];
  /** Resolves when the server has accepted the stream (its response headers). */
  readonly opened: Promise<void>;
  /** How the stream ended: `null` for a clean end by the server. */
  readonly ended: Promise<Error | null>;
  /** Resolves once `n` jobs in all have arrived. */
  received(n: number): Promise<RemoteJob[]>;
}

export function openWork(client: TelhaClient, params: Parameters<TelhaClient['work']>[0]): OpenedWork {
  const jobs: RemoteJob[] = [];
  const waiters: { n: number; resolve: (jobs: RemoteJob[]) => void }[] = [];
  let end!: (error: Error | null) => void;
  const ended = new Promise<Error | null>((resolve) => (end = resolve));
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const channel = client.work(params, {
    onOpen: () => open(),
    onJobs(pushed) {
      jobs.push(...pushed);
      for (const waiter of waiters.filter((w) => jobs.length >= w.n)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(jobs.slice());
      }
    },
    onEnd: (error) => end(error),
  });
  return {
    channel,
    jobs,
    opened,
    ended,
    received: (n) =>
      jobs.length >= n ? Promise.resolve(jobs.slice()) : new Promise((resolve) => waiters.push({ n, resolve })),
  };
}
