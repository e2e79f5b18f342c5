/**
 * What the store's servers say to each other on the schema's LISTEN/NOTIFY channel: work that
 * appeared (`noticePayload`), transitions to read from the log, and whose readers follow the log.
 * Pure functions over the payload text, no I/O; `listener.ts` sends and hears them.
 */
import type { WorkNotice } from '../../core/types.ts';

/** NOTIFY payloads must stay under 8,000 bytes; past this, say "look again" instead of what. */
const MAX_NOTICE_BYTES = 7_000;

/** The message a write sends to every server: who sent it (to skip its own) and what work appeared. */
export function noticePayload(origin: string, notices: readonly WorkNotice[]): string {
  const text = JSON.stringify({ o: origin, w: notices.map((n) => [n.tenant, n.kind, n.ready ? 1 : 0, n.count]) });
  return Buffer.byteLength(text) <= MAX_NOTICE_BYTES ? text : allWorkPayload(origin);
}

/** The message that tells every server's lease waiters to look again at all work. */
export function allWorkPayload(origin: string): string {
  return JSON.stringify({ o: origin, w: 'all' });
}

/** The message a server sends after committing transitions: look at the log again. */
export function logNoticePayload(origin: string): string {
  return JSON.stringify({ o: origin, l: 1 });
}

/** The message of a server whose readers follow the log: tell me of your transitions (`f`); or who does (`q`)? */
export function followersPayload(origin: string, ask: boolean): string {
  return JSON.stringify(ask ? { o: origin, q: 1 } : { o: origin, f: 1 });
}

/**
 * A notification: who sent it, and what work appeared (`null`: none, only log entries), or that
 * its readers follow the log (`followers`) or it asks who has such readers (`ask`).
 */
export function parseNotice(
  payload: string,
): { origin: string; work: WorkNotice[] | 'all' | null; followers?: true; ask?: true } | null {
  try {
    const parsed = JSON.parse(payload) as { o?: unknown; w?: unknown; l?: unknown; f?: unknown; q?: unknown };
    if (typeof parsed.o !== 'string') return null;
    if (parsed.f === 1) return { origin: parsed.o, work: null, followers: true };
    if (parsed.q === 1) return { origin: parsed.o, work: null, ask: true };
    if (parsed.l === 1) return { origin: parsed.o, work: null };
    if (!Array.isArray(parsed.w)) return { origin: parsed.o, work: 'all' };
    const work = (parsed.w as unknown[][]).map(([tenant, kind, ready, count]) => ({
      tenant: typeof tenant === 'string' ? tenant : null,
      kind: String(kind),
      ready: ready === 1,
      count: Number(count),
    }));
    return { origin: parsed.o, work };
  } catch {
    return null;
  }
}
