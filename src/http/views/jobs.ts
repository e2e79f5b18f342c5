/** The jobs list, one job with its audit trail, and the bulk retry's confirmation. */
import { JOB_STATE_NAMES, JobState, type JobEvent, type JobRecord, type Micros } from '../../core/types.ts';
import { ORDER_WAIT } from '../../core/ordered-keys.ts';
import { MAX_BULK_JOBS, MAX_SCANNED_ROWS, type BulkResult, type JobsPage } from '../browse.ts';
import { href, html, type Html } from '../html.ts';
import type { FILTER_PARAMS } from '../params.ts';
import { filterQuery, type JobFilter, type ListParams } from '../params.ts';
import {
  csrfField,
  LIVE_ON_COUNTS,
  liveBadge,
  notice,
  number,
  page,
  span,
  stateBadge,
  timestamp,
  when,
  type Viewer,
} from './layout.ts';
import { valueView } from './values.ts';

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

export const canRetry = (viewer: Viewer): boolean => viewer.principal.role === 'operator';
/** Operators anywhere, tenants their own jobs (the only ones they can see); workers never. */
export const canCancel = (viewer: Viewer): boolean => viewer.principal.role !== 'worker';
/** Run now takes the enqueue permission, as on gRPC: an operator's or a tenant's. */
export const canEnqueue = (viewer: Viewer): boolean => viewer.principal.role !== 'worker';

/** `datetime-local` value (UTC) for µs. */
function localInput(at: Micros | null): string {
  return at === null ? '' : new Date(Math.floor(at / 1000)).toISOString().slice(0, 16);
}

/**
 * What the filter form shows, by parameter name: a parsed filter's values, or the values as the
 * browser sent them when the server refused one, so the operator sees what to correct.
 */
export type FilterValues = Readonly<Partial<Record<(typeof FILTER_PARAMS)[number], string>>>;

function formValues(filter: JobFilter): FilterValues {
  return {
    state: filter.state === null ? '' : JOB_STATE_NAMES[filter.state],
    kind: filter.kind ?? '',
    tenant: filter.tenant ?? '',
    created_after: localInput(filter.createdAfter),
    created_before: localInput(filter.createdBefore),
    order: filter.order === 'oldest_first' ? 'oldest' : 'newest',
    system: filter.includeSystem ? '1' : '',
  };
}

function filterForm(viewer: Viewer, values: FilterValues): Html {
  const stateName = values.state ?? '';
  const option = (value: string, label: string): Html =>
    html`<option value="${value}" ${value === stateName ? html` selected` : ''}>${label}</option>`;
  return html`<form
    class="filters"
    method="get"
    action="/jobs"
    hx-get="/jobs"
    hx-target="#results"
    hx-select="#results"
    hx-swap="outerHTML"
    hx-push-url="true"
    hx-trigger="change, submit"
  >
    <label
      >State
      <select name="state">
        ${option('', 'any')}${option('pending', 'Pending')}${option('leased', 'Leased')}${option('completed', 'Completed')}${option('dead', 'Dead')}${option('cancelled', 'Cancelled')}
      </select></label
    >
    <label
      >Kind prefix
      <input name="kind" value="${values.kind ?? ''}" placeholder="email." spellcheck="false" autocomplete="off"
    /></label>
    ${
      viewer.principal.role === 'tenant'
        ? ''
        : html`<label
            >Tenant
            <input
              name="tenant"
              value="${values.tenant ?? ''}"
              placeholder="every tenant"
              spellcheck="false"
              autocomplete="off"
          /></label>`
    }
    <label
      >Created after <input type="datetime-local" name="created_after" value="${values.created_after ?? ''}"
    /></label>
    <label
      >Created before <input type="datetime-local" name="created_before" value="${values.created_before ?? ''}"
    /></label>
    <label
      >Order
      <select name="order">
        <option value="newest" ${values.order === 'oldest' ? '' : 'selected'}>newest first</option>
        <option value="oldest" ${values.order === 'oldest' ? 'selected' : ''}>oldest first</option>
      </select></label
    >
    <label
      ><input type="checkbox" name="system" value="1" ${values.system === '1' ? 'checked' : ''} /> system jobs</label
    >
    <button type="submit">Filter</button>
    <a class="button subtle" href="/jobs">Clear</a>
  </form>`;
}

function lastEvent(job: JobRecord): JobEvent | undefined {
  return job.events[job.events.length - 1];
}

/** Failures whose error a list row shows: a job still to run again, or dead. */
const SHOWS_LAST_ERROR: ReadonlySet<JobState> = new Set([JobState.Pending, JobState.Leased, JobState.Dead]);
/** Characters of an error a list row shows; the job page has the whole. */
const ROW_ERROR_CHARS = 160;

/**
 * The error of the job's latest failed attempt (a handler's message, or an expired lease), or
 * null when none failed. A Completed or Cancelled job's earlier failures are history, not news.
 */
export function lastError(job: JobRecord): string | null {
  if (!SHOWS_LAST_ERROR.has(job.state)) return null;
  for (let i = job.events.length - 1; i >= 0; i--) {
    const event = job.events[i] as JobEvent;
    // The message only: a row has no room for a stack trace (the job page shows it).
    if (event.transition === 'failed') return splitStack(parseDetail(event.detail).message ?? 'failed').message;
    if (event.transition === 'reaped') return 'the lease expired (no heartbeat in time)';
    if (event.transition === 'enqueued') return null;
  }
  return null;
}

/** The box that opens a job by its id (`/jobs/find`), on the Jobs page and the page that answers it. */
export function findForm(value = ''): Html {
  return html`<form class="find" method="get" action="/jobs/find" role="search">
    <label
      >Job id
      <input name="id" value="${value}" placeholder="0193…-…" size="38" spellcheck="false" autocomplete="off" required
    /></label>
    <button type="submit">Open</button>
  </form>`;
}

/** The answer to a job id that opens no job: the same words for a missing job and another tenant's. */
export function jobNotFoundPage(viewer: Viewer, value: string, message: string): Html {
  return page({
    title: 'Job not found',
    section: 'jobs',
    viewer,
    body: html`<div class="heading"><h1>Jobs</h1></div>
      ${findForm(value)} ${notice('error', message)}
      <p><a href="/jobs">Back to the list</a></p>`,
  });
}

/** What the Jobs page lists: a page of rows, or the message of a filter the server refused. */
export type JobsView =
  | { readonly params: ListParams; readonly result: JobsPage }
  | { readonly refused: string; readonly values: FilterValues };

export function jobsPage(viewer: Viewer, view: JobsView, now: Micros): Html {
  const values = 'refused' in view ? view.values : formValues(view.params);
  const bulk =
    'params' in view && canRetry(viewer) && view.params.state === JobState.Dead
      ? html`<a class="button danger" href="${href('/jobs/retry-dead', filterQuery(view.params))}"
          >Retry all Dead jobs matching this filter…</a
        >`
      : '';
  return page({
    title: 'Jobs',
    section: 'jobs',
    viewer,
    body: html`<div class="heading">
        <h1>Jobs</h1>
        ${liveBadge()} ${findForm()} ${bulk}
      </div>
      ${filterForm(viewer, values)}
      ${
        'refused' in view
          ? html`<div id="results">${notice('error', view.refused)}</div>`
          : jobsResults(viewer, view.params, view.result, now)
      }`,
  });
}

function jobsResults(viewer: Viewer, params: ListParams, result: JobsPage, now: Micros): Html {
  const filter = filterQuery(params);
  const showTenant = viewer.principal.role !== 'tenant';
  const timeFiltered = params.createdAfter !== null || params.createdBefore !== null;
  const errors = result.jobs.map(lastError);
  const showErrors = errors.some((error) => error !== null);
  const rows = result.jobs.map((job, i) => {
    const last = lastEvent(job);
    const error = errors[i] ?? null;
    return html`<tr>
      <td><a class="mono id" href="${href(`/jobs/${job.jobId}`)}">${job.jobId}</a></td>
      <td class="mono">${job.kind}</td>
      ${showTenant ? html`<td class="mono">${job.tenant ?? html`<span class="system">system</span>`}</td>` : ''}
      <td>${stateBadge(job.state)}</td>
      <td class="num">${job.attempts}</td>
      <td class="num">${job.priority}</td>
      <td>${when(job.createdAt, now)}</td>
      <td>
        ${last === undefined ? '' : html`<span class="ev ${last.transition}">${last.transition}</span> ${when(last.at, now)}`}
      </td>
      ${
        showErrors
          ? html`<td class="last-error">
              ${
                error === null
                  ? ''
                  : html`<span class="error-text"
                      >${error.length > ROW_ERROR_CHARS ? `${error.slice(0, ROW_ERROR_CHARS)}…` : error}</span
                    >`
              }
            </td>`
          : ''
      }
    </tr>`;
  });
  return html`<div id="results" data-live="${LIVE_ON_COUNTS}">
    ${
      result.jobs.length === 0
        ? html`<p class="empty">
            No jobs
            match${timeFiltered && result.nextPageToken !== null ? html` in the first ${number(result.scanned)} rows read` : ''}.
          </p>`
        : html`<table class="grid jobs">
            <thead>
              <tr>
                <th>Job</th>
                <th>Kind</th>
                ${showTenant ? html`<th>Tenant</th>` : ''}
                <th>State</th>
                <th class="num">Attempts</th>
                <th class="num">Priority</th>
                <th>Created</th>
                <th>Last event</th>
                ${showErrors ? html`<th>Last error</th>` : ''}
              </tr>
            </thead>
            <tbody>
              ${rows}
            </tbody>
          </table>`
    }
    <nav class="pager" hx-boost="true" hx-target="#results" hx-select="#results" hx-swap="outerHTML">
      ${params.pageToken === null ? '' : html`<a class="button subtle" href="${href('/jobs', filter)}">« First page</a>`}
      <span class="hint"
        >${number(result.jobs.length)}
        shown${timeFiltered ? html` · ${number(result.scanned)} read (the time filter applies within pages of at most ${number(MAX_SCANNED_ROWS)} rows)` : ''}
        · in key order: scope, state, priority, creation</span
      >
      ${
        result.nextPageToken === null
          ? ''
          : html`<a
              class="button"
              rel="next"
              href="${href('/jobs', { ...filter, page_token: result.nextPageToken, limit: params.limit === 50 ? null : params.limit })}"
              >Next page »</a
            >`
      }
    </nav>
  </div>`;
}

/** Words a detail may carry on their own (a permanent failure's mark). */
const FLAGS: ReadonlySet<string> = new Set(['permanent']);

/** An event's `key=value` words, and the text after the first `: ` (a failure's error). */
function parseDetail(detail: string | null): { fields: Map<string, string>; flags: string[]; message: string | null } {
  const fields = new Map<string, string>();
  const flags: string[] = [];
  if (detail === null) return { fields, flags, message: null };
  const colon = detail.indexOf(': ');
  const head = colon === -1 ? detail : detail.slice(0, colon);
  const message = colon === -1 ? null : detail.slice(colon + 2);
  const words = head.split(' ').filter((w) => w !== '');
  // Only `key=value` words (worker ids and generations carry no spaces); anything else stays in the message.
  if (!words.every((w) => /^[a-z_]+=\S*$/.test(w) || FLAGS.has(w))) return { fields, flags, message: detail };
  for (const word of words) {
    const eq = word.indexOf('=');
    if (eq === -1) flags.push(word);
    else fields.set(word.slice(0, eq), word.slice(eq + 1));
  }
  return { fields, flags, message };
}

/** Free text with any job ids in it as links to those jobs (chained successors, for one). */
function linkIds(text: string): Html {
  const parts: Html[] = [];
  let last = 0;
  for (const match of text.matchAll(UUID)) {
    parts.push(html`${text.slice(last, match.index)}`);
    parts.push(html`<a class="mono" href="${href(`/jobs/${match[0]}`)}">${match[0]}</a>`);
    last = match.index + match[0].length;
  }
  parts.push(html`${text.slice(last)}`);
  return html`${parts}`;
}

const TITLES: Readonly<Record<string, string>> = {
  enqueued: 'Enqueued',
  leased: 'Leased',
  extended: 'Heartbeat',
  checkpoint: 'Checkpoint',
  completed: 'Completed',
  failed: 'Failed',
  reaped: 'Lease expired, reaped',
  dead: 'Dead-lettered',
  retried: 'Retried by an operator',
  stats: 'Older events folded',
  released: 'Released',
  progress: 'Progress reported',
  cancelled: 'Cancelled',
};

/** Transitions a long lease repeats, in turn: a run of them shows as one row with counts. */
const RUNS: ReadonlySet<string> = new Set(['extended', 'progress']);
/** Lines of a stack trace a failure's row shows at most; the detail itself is bounded by the record. */
const STACK_LINES = 40;

/** One row of the timeline: an event, or a run of heartbeats and progress reports folded into one. */
interface TimelineRow {
  readonly event: JobEvent;
  /** The event the row's gap counts from: the last one before it that is a moment (not a fold). */
  readonly previous: JobEvent | undefined;
  /** For a run: its first event and how many heartbeats and progress reports it holds. */
  readonly run: { readonly first: JobEvent; readonly heartbeats: number; readonly progress: number } | null;
}

const countOf = (event: JobEvent): number => Number(/ ?count=(\d+)$/.exec(event.detail ?? '')?.[1] ?? '1');

/**
 * The rows of a trail: runs of heartbeats and progress reports (which alternate for a job that
 * reports progress, so the store's own folding of repeats cannot join them) as one row each.
 */
export function timelineRows(events: readonly JobEvent[]): TimelineRow[] {
  const rows: TimelineRow[] = [];
  let previous: JobEvent | undefined;
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as JobEvent;
    let end = i;
    while (RUNS.has(event.transition) && RUNS.has(events[end + 1]?.transition ?? '')) end++;
    if (end > i) {
      const run = events.slice(i, end + 1);
      const sum = (transition: string): number =>
        run.filter((e) => e.transition === transition).reduce((total, e) => total + countOf(e), 0);
      const last = run[run.length - 1] as JobEvent;
      rows.push({
        event: last,
        previous,
        run: { first: event, heartbeats: sum('extended'), progress: sum('progress') },
      });
      previous = last;
      i = end;
      continue;
    }
    rows.push({ event, previous, run: null });
    // A `stats` event is stamped when it folded, later than the events after it: no moment to count from.
    if (event.transition !== 'stats') previous = event;
  }
  return rows;
}

/** A failure's text split in two: the message, and any `    at ...` lines after its first line (a stack trace). */
function splitStack(text: string): { message: string; stack: readonly string[] } {
  const lines = text.split('\n');
  const stackAt = lines.findIndex((line, i) => i > 0 && /^\s+at /.test(line));
  if (stackAt === -1) return { message: text, stack: [] };
  return { message: lines.slice(0, stackAt).join('\n'), stack: lines.slice(stackAt) };
}

/** A failure's text: the message, and its stack trace folded under it. */
function errorView(text: string): Html {
  const { message, stack } = splitStack(text);
  if (stack.length === 0) return html`<div class="message error">${linkIds(message)}</div>`;
  const shown = stack.slice(0, STACK_LINES);
  return html`<div class="message error">${linkIds(message)}</div>
    <details class="stack">
      <summary>Stack trace <span class="hint">${number(stack.length)} lines</span></summary>
      <pre>
${shown.join('\n')}${stack.length > shown.length ? `\n… ${number(stack.length - shown.length)} more lines` : ''}</pre>
    </details>`;
}

function eventView({ event, previous, run }: TimelineRow): Html {
  const { fields, flags, message } = parseDetail(event.detail);
  const count = Number(fields.get('count') ?? '1');
  const chips: Html[] = [];
  const worker = fields.get('worker');
  const generation = fields.get('generation');
  if (worker !== undefined) chips.push(html`<span class="chip">worker <b class="mono">${worker}</b></span>`);
  if (generation !== undefined) chips.push(html`<span class="chip gen">generation <b>${generation}</b></span>`);
  const attempt = fields.get('attempt');
  if (attempt !== undefined) chips.push(html`<span class="chip">attempt <b>${attempt}</b></span>`);
  const bytes = fields.get('bytes');
  if (bytes !== undefined) chips.push(html`<span class="chip">${number(Number(bytes))} bytes</span>`);
  for (const flag of flags) chips.push(html`<span class="chip warn">${flag}</span>`);
  for (const [key, value] of fields) {
    if (['worker', 'generation', 'attempt', 'bytes', 'count'].includes(key)) continue;
    chips.push(
      html`<span class="chip"
        >${key.replace(/_/g, ' ')} <b class="mono">${key === 'not_before' ? timestamp(Number(value)) : value}</b></span
      >`,
    );
  }
  if (run !== null) chips.push(html`<span class="chip">over <b>${span(event.at - run.first.at)}</b></span>`);
  const title =
    run !== null
      ? `Heartbeats ×${number(run.heartbeats)} · progress reports ×${number(run.progress)}`
      : event.transition === 'extended' && count > 1
        ? `Heartbeats ×${number(count)}`
        : event.transition === 'checkpoint' && count > 1
          ? `Checkpoints ×${number(count)}`
          : event.transition === 'progress' && count > 1
            ? `Progress reports ×${number(count)}`
            : (TITLES[event.transition] ?? event.transition);
  const when =
    event.transition === 'stats'
      ? html`<span class="delta">folded</span>`
      : html`<time datetime="${new Date(Math.floor(event.at / 1000)).toISOString()}">${timestamp(event.at)}</time>${
            previous === undefined ? '' : html`<span class="delta">+${span(event.at - previous.at)}</span>`
          }`;
  return html`<li class="event ${run === null ? event.transition : 'extended run'}">
    <div class="when">${when}</div>
    <div class="what">
      <span class="title">${title}</span>${chips}
      ${
        message === null
          ? ''
          : event.transition === 'failed'
            ? errorView(message)
            : html`<div class="message">${linkIds(message)}</div>`
      }
    </div>
  </li>`;
}

/**
 * How far a job's progress says it is, as a fraction, when it is a number: a bare number is a
 * percentage (0-100, BullMQ's convention), `{"percent": n}` too, and `{"done": a, "total": b}` (or
 * `current`/`total`) a count. Anything else is the handler's own shape, shown only as JSON.
 */
export function progressFraction(progress: string): number | null {
  let value: unknown;
  try {
    value = JSON.parse(progress);
  } catch {
    return null;
  }
  const finite = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n);
  let fraction: number | null = null;
  if (finite(value)) fraction = value / 100;
  else if (typeof value === 'object' && value !== null) {
    const fields = value as Record<string, unknown>;
    const done = fields['done'] ?? fields['current'];
    if (finite(fields['percent'])) fraction = fields['percent'] / 100;
    else if (finite(done) && finite(fields['total']) && fields['total'] > 0) fraction = done / fields['total'];
  }
  return fraction === null || fraction < 0 || fraction > 1 ? null : fraction;
}

function progressBar(progress: string): Html {
  const fraction = progressFraction(progress);
  if (fraction === null) return html``;
  const percent = Math.floor(fraction * 1000) / 10;
  return html`<div class="progress">
    <progress max="1000" value="${Math.round(fraction * 1000)}">${percent}%</progress>
    <span class="progress-text">${percent}%</span>
  </div>`;
}

function fact(label: string, value: Html | string | number): Html {
  return html`<div class="fact">
    <dt>${label}</dt>
    <dd>${value}</dd>
  </div>`;
}

export interface JobPageContext {
  readonly now: Micros;
  readonly effectiveMaxAttempts: number;
  readonly message: Html | null;
  /**
   * The transitions log's position the page was read at, from which its script follows the job and
   * fetches the page again on each transition; `null` when the server keeps no log (`watch.enabled`).
   */
  readonly liveFrom: string | null;
}

export function jobPage(viewer: Viewer, job: JobRecord, context: JobPageContext): Html {
  const { now, effectiveMaxAttempts, message, liveFrom } = context;
  const retry =
    canRetry(viewer) && (job.state === JobState.Dead || job.state === JobState.Cancelled)
      ? html`<form
          method="post"
          action="${href(`/jobs/${job.jobId}/retry`)}"
          class="inline"
          data-confirm="Retry this job? It goes back to Pending with its attempts reset."
        >
          ${csrfField(viewer)}<button class="primary" id="retry">Retry this job</button>
        </form>`
      : '';
  // Discard and run now: the same callers as gRPC's (a tenant on its own jobs), each confirmed
  // in the browser first (app.js reads data-confirm), since neither can be taken back as it was.
  const discard =
    canCancel(viewer) && job.state === JobState.Dead
      ? html`<form
          method="post"
          action="${href(`/jobs/${job.jobId}/discard`)}"
          class="inline"
          data-confirm="Discard this dead job? It leaves the Dead list for Cancelled; its record stays until retention prunes it."
        >
          ${csrfField(viewer)}<button class="danger" id="discard">Discard</button>
        </form>`
      : '';
  const runNow =
    canEnqueue(viewer) && job.state === JobState.Pending && job.notBefore !== null && job.notBefore > now
      ? html`<form
          method="post"
          action="${href(`/jobs/${job.jobId}/run-now`)}"
          class="inline"
          data-confirm="Run this job now, skipping its delay or backoff?"
        >
          ${csrfField(viewer)}<button class="primary" id="run-now">Run now</button>
        </form>`
      : '';
  const cancel =
    canCancel(viewer) && (job.state === JobState.Pending || job.state === JobState.Leased)
      ? html`<form
          method="post"
          action="${href(`/jobs/${job.jobId}/cancel`)}"
          class="inline"
          data-confirm="Cancel this job? It will not run again unless an operator retries it."
        >
          ${csrfField(viewer)}<button class="danger" id="cancel">Cancel this job</button>
        </form>`
      : '';
  const none = html`<span class="zero">—</span>`;
  const nothing = html`<p class="empty">none</p>`;
  return page({
    title: `Job ${job.jobId}`,
    section: 'jobs',
    viewer,
    body: html`<div
      id="job-live"
      ${liveFrom === null ? '' : html`data-events="${href(`/jobs/${job.jobId}/events`, { from: liveFrom })}"`}
    >
      <div class="heading">
        <h1><span class="mono">${job.kind}</span> ${stateBadge(job.state)}</h1>
        ${
          liveFrom === null
            ? ''
            : html`<span class="live" id="live" data-state="connecting"
                ><span class="dot"></span><span id="live-text">connecting…</span></span
              >`
        }
        ${runNow}${retry}${discard}${cancel}
      </div>
      ${message ?? ''}
      <p class="mono id-line">${job.jobId}</p>
      <section class="panel">
        <dl class="facts">
          ${fact('Tenant', job.tenant === null ? html`<span class="system">system</span>` : html`<span class="mono">${job.tenant}</span>`)}
          ${fact('State', stateBadge(job.state))} ${fact('Attempts', `${job.attempts} of ${effectiveMaxAttempts}`)}
          ${fact('Priority', job.priority)} ${fact('Lease generation', job.leaseGeneration)}
          ${fact('Worker', job.workerId === null ? none : html`<a class="mono" href="${href('/leases', { worker: job.workerId })}">${job.workerId}</a>`)}
          ${fact('Lease deadline', job.leaseDeadline === null ? none : when(job.leaseDeadline, now))}
          ${job.attemptDeadline === null ? '' : fact('Attempt times out', when(job.attemptDeadline, now))}
          ${job.timeoutSecs === null ? '' : fact('Timeout per attempt', `${job.timeoutSecs} s`)}
          ${fact('Not before', job.notBefore === null ? none : when(job.notBefore, now))}
          ${fact('Idempotency key', job.idempotencyKey === null ? none : html`<span class="mono">${job.idempotencyKey}</span>`)}
          ${job.supersedeKey === null ? '' : fact('Supersede key', html`<span class="mono">${job.supersedeKey}</span>`)}
          ${job.orderKey === null ? '' : fact('Order key', html`<span class="mono">${job.orderKey}</span> ${job.state === JobState.Pending && job.notBefore === ORDER_WAIT ? '(waiting for its turn)' : ''} ${job.orderReleaseOnDead ? '(releases the key when dead)' : '(blocks the key when dead)'}`)}
          ${job.supersededBy === null ? '' : fact('Superseded by', html`<a class="mono" href="${href(`/jobs/${job.supersededBy}`)}">${job.supersededBy}</a>`)}
          ${fact('Created', when(job.createdAt, now))}
          ${job.traceContext === null ? '' : fact('Trace id', html`<span class="mono">${job.traceContext.traceparent.split('-')[1] ?? ''}</span>`)}
        </dl>
      </section>
      <div class="split">
        <section class="panel">
          <h2>Audit trail <span class="hint">${number(job.events.length)} events, oldest first</span></h2>
          <ol class="timeline">
            ${timelineRows(job.events).map(eventView)}
          </ol>
        </section>
        <section class="panel">
          <h2>Payload</h2>
          ${valueView(job.jobId, 'payload', job.payload)}
          <h2>Continuation <span class="hint">the last checkpoint of the current lease</span></h2>
          ${job.continuation === null ? nothing : valueView(job.jobId, 'continuation', job.continuation)}
          <h2>Progress <span class="hint">the last the current (or last) attempt reported</span></h2>
          ${job.progress === null ? nothing : html`${progressBar(job.progress)}${valueView(job.jobId, 'progress', job.progress)}`}
          <h2>Result <span class="hint">what the handler returned</span></h2>
          ${job.result === null ? nothing : valueView(job.jobId, 'result', job.result)}
        </section>
      </div>
    </div>`,
  });
}

export function confirmRetryPage(viewer: Viewer, filter: JobFilter, count: number): Html {
  const query = filterQuery(filter);
  const described = [
    filter.kind === null ? null : html`kind starting with <b class="mono">${filter.kind}</b>`,
    filter.tenant === null ? null : html`tenant <b class="mono">${filter.tenant}</b>`,
    filter.createdAfter === null ? null : html`created after ${timestamp(filter.createdAfter)} UTC`,
    filter.createdBefore === null ? null : html`created before ${timestamp(filter.createdBefore)} UTC`,
  ].filter((x) => x !== null);
  const over = count > MAX_BULK_JOBS;
  return page({
    title: 'Retry Dead jobs',
    section: 'jobs',
    viewer,
    body: html`<h1>Retry Dead jobs</h1>
      <section class="panel confirm">
        ${
          count === 0
            ? html`<p>No Dead job matches this filter.</p>
                <p><a class="button" href="${href('/jobs', query)}">Back to the list</a></p>`
            : html`<p>
                  This moves <b id="bulk-count">${over ? `the first ${number(MAX_BULK_JOBS)}` : number(count)}</b> Dead
                  job${count === 1 ? '' : 's'}${
                    described.length === 0 ? '' : html` (${described.map((d, i) => html`${i > 0 ? ', ' : ''}${d}`)})`
                  }
                  back to Pending with their attempts reset. Each retry is written to its job's audit trail.
                </p>
                ${over ? notice('info', html`More than ${number(MAX_BULK_JOBS)} match; run it again for the rest.`) : ''}
                <form method="post" action="/jobs/retry-dead">
                  ${csrfField(viewer)}
                  ${Object.entries(query).map(([name, value]) => (value === null ? '' : html`<input type="hidden" name="${name}" value="${value}" />`))}
                  <button class="danger" id="confirm">Yes, retry them</button>
                  <a class="button subtle" href="${href('/jobs', query)}">Cancel</a>
                </form>`
        }
      </section>`,
  });
}

export function bulkDonePage(viewer: Viewer, filter: JobFilter, result: BulkResult): Html {
  const query = filterQuery({ ...filter, state: JobState.Pending });
  return page({
    title: 'Retried',
    section: 'jobs',
    viewer,
    body: html`<h1>Retry Dead jobs</h1>
      ${notice(
        'ok',
        html`Retried <b id="bulk-retried">${number(result.retried)}</b> job${result.retried === 1 ? '' : 's'}${
            result.skipped > 0 ? html`; ${number(result.skipped)} were no longer Dead` : ''
          }.`,
      )}
      <p><a class="button" href="${href('/jobs', query)}">See them in Pending</a></p>`,
  });
}
