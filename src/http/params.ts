/**
 * Query and form parameters, validated before anything is read or changed:
 * a bad one is `invalid_argument` naming it (HTTP 400), as on gRPC.
 */
import type { ListOrder } from '../core/list-order.ts';
import { invalidArgument } from '../core/errors.ts';
import { JobState } from '../core/types.ts';
import { MAX_KIND_BYTES } from '../core/bounds.ts';
import { checkJobId, checkTenant, checkWorkerId, utf8Length } from '../core/validate.ts';

/** What the jobs list filters on. */
export interface JobFilter {
  readonly state: JobState | null;
  readonly kind: string | null;
  /** Operators only: one tenant's scope. */
  readonly tenant: string | null;
  /** µs; jobs created at or after. */
  readonly createdAfter: number | null;
  /** µs; jobs created strictly before. */
  readonly createdBefore: number | null;
  /** Newest first unless `order=oldest`. */
  readonly order: ListOrder;
  /** `system=1`: across every scope, the system scope's jobs (`system:prune`) too. */
  readonly includeSystem: boolean;
}

export interface ListParams extends JobFilter {
  readonly pageToken: string | null;
  readonly limit: number;
}

/** Rows a page of the jobs list shows by default, and at most. */
export const DEFAULT_PAGE_ROWS = 50;
export const MAX_PAGE_ROWS = 500;

const STATES: Readonly<Record<string, JobState>> = {
  pending: JobState.Pending,
  leased: JobState.Leased,
  completed: JobState.Completed,
  dead: JobState.Dead,
  cancelled: JobState.Cancelled,
};

type Query = Readonly<Record<string, unknown>>;

/** Refuse parameters the route does not know, so a typo is an error rather than a silently ignored filter. */
export function onlyKnown(query: Query, known: readonly string[]): void {
  for (const name of Object.keys(query)) {
    if (!known.includes(name)) throw invalidArgument(name, 'unknown parameter');
  }
}

/** A parameter given once, as text; empty counts as absent (an untouched form field). */
function text(query: Query, name: string): string | null {
  const value = query[name];
  if (value === undefined || value === '') return null;
  if (typeof value !== 'string') throw invalidArgument(name, 'give it once');
  return value;
}

/**
 * A time as an HTML `datetime-local` field sends it (`2026-11-30T20:41`,
 * read as UTC) or any ISO 8601 time with a zone, or µs since the epoch.
 */
function time(query: Query, name: string): number | null {
  const value = text(query, name);
  if (value === null) return null;
  if (/^\d{1,17}$/.test(value)) return Number(value);
  const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/.test(value) ? `${value}Z` : value;
  const ms = /^\d{4}-\d{2}-\d{2}T/.test(iso) ? Date.parse(iso) : NaN;
  if (!Number.isFinite(ms)) throw invalidArgument(name, 'must be a time like 2026-11-30T20:41 (UTC)');
  return ms * 1000;
}

export const FILTER_PARAMS = ['state', 'kind', 'tenant', 'created_after', 'created_before', 'order', 'system'] as const;

export function parseFilter(query: Query): JobFilter {
  const stateName = text(query, 'state');
  let state: JobState | null = null;
  if (stateName !== null) {
    const found = STATES[stateName];
    if (found === undefined) throw invalidArgument('state', 'must be pending, leased, completed or dead');
    state = found;
  }
  const kind = text(query, 'kind');
  // eslint-disable-next-line no-control-regex
  if (kind !== null && (utf8Length(kind) > MAX_KIND_BYTES || /[\s\x00-\x1f\x7f]/.test(kind)))
    throw invalidArgument(
      'kind',
      `a kind prefix is at most ${MAX_KIND_BYTES} bytes, without spaces or control characters`,
    );
  const tenant = text(query, 'tenant');
  const createdAfter = time(query, 'created_after');
  const createdBefore = time(query, 'created_before');
  const order = text(query, 'order');
  if (order !== null && order !== 'newest' && order !== 'oldest')
    throw invalidArgument('order', 'must be newest or oldest');
  const system = text(query, 'system');
  if (system !== null && system !== '1') throw invalidArgument('system', 'must be 1 (show system jobs) or left out');
  return {
    state,
    kind,
    tenant: tenant === null ? null : checkTenant(tenant, 'tenant'),
    createdAfter,
    createdBefore,
    order: order === 'oldest' ? 'oldest_first' : 'newest_first',
    includeSystem: system === '1',
  };
}

export function parseList(query: Query): ListParams {
  onlyKnown(query, [...FILTER_PARAMS, 'page_token', 'limit']);
  const limitText = text(query, 'limit');
  let limit = DEFAULT_PAGE_ROWS;
  if (limitText !== null) {
    if (!/^\d{1,4}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > MAX_PAGE_ROWS)
      throw invalidArgument('limit', `must be a whole number from 1 to ${MAX_PAGE_ROWS}`);
    limit = Number(limitText);
  }
  const pageToken = text(query, 'page_token');
  if (pageToken !== null && pageToken.length > 4096) throw invalidArgument('page_token', 'is too long');
  return { ...parseFilter(query), pageToken, limit };
}

export function parseJobId(value: unknown): string {
  return checkJobId(value, 'job_id');
}

/** The values of a job whose raw bytes download from `/jobs/:id/raw/<value>`. */
export const RAW_VALUES = ['payload', 'continuation', 'progress', 'result'] as const;
export type RawValue = (typeof RAW_VALUES)[number];

export function parseRawValue(value: string): RawValue {
  const found = RAW_VALUES.find((name) => name === value);
  if (found === undefined) throw invalidArgument('value', `one of ${RAW_VALUES.join(', ')}`);
  return found;
}

export function parseWorker(query: Query): string | null {
  onlyKnown(query, ['worker']);
  const worker = text(query, 'worker');
  return worker === null ? null : checkWorkerId(worker, 'worker');
}

/** The filter as query parameters, to carry it through links and forms. */
export function filterQuery(filter: JobFilter): Record<string, string | null> {
  const stateName = Object.entries(STATES).find(([, s]) => s === filter.state)?.[0] ?? null;
  return {
    state: stateName,
    kind: filter.kind,
    tenant: filter.tenant,
    created_after: filter.createdAfter === null ? null : String(filter.createdAfter),
    created_before: filter.createdBefore === null ? null : String(filter.createdBefore),
    order: filter.order === 'oldest_first' ? 'oldest' : null,
    system: filter.includeSystem ? '1' : null,
  };
}
