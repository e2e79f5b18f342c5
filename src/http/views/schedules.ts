/**
 * Schedules: what fires when and what it enqueues, each row with its controls (run now, pause or
 * resume, edit, delete), and the form that creates or edits one (`schedule-form.ts`).
 */
import type { Schedule } from '../../core/schedules.ts';
import type { Micros } from '../../core/types.ts';
import { scopeValue } from '../forms.ts';
import { href, html, type Html } from '../html.ts';
import { csrfField, LIVE_EVERY_SAMPLE, liveBadge, notice, number, page, when, type Viewer } from './layout.ts';

/** The fields a row's control posts: which schedule. */
function identity(viewer: Viewer, s: Schedule): Html {
  return html`${csrfField(viewer)}<input type="hidden" name="scope" value="${scopeValue(s.scope)}" /><input
      type="hidden"
      name="name"
      value="${s.name}"
    />`;
}

function actions(viewer: Viewer, s: Schedule): Html {
  return html`<td class="actions">
    <div class="row-actions">
      <form
        method="post"
        action="/schedules/run"
        class="inline"
        data-confirm="Enqueue a job of schedule ${s.name} now? Its next due time stays."
      >
        ${identity(viewer, s)}<button class="primary" data-action="run">Run now</button>
      </form>
      <form method="post" action="${s.paused ? '/schedules/resume' : '/schedules/pause'}" class="inline">
        ${identity(viewer, s)}<button data-action="${s.paused ? 'resume' : 'pause'}">
          ${s.paused ? 'Resume' : 'Pause'}
        </button>
      </form>
      <a
        class="button"
        data-action="edit"
        href="${href('/schedules/edit', { scope: scopeValue(s.scope), name: s.name })}"
        >Edit</a
      >
      <form
        method="post"
        action="/schedules/delete"
        class="inline"
        data-confirm="Delete schedule ${s.name}? It stops firing; the jobs it enqueued stay."
      >
        ${identity(viewer, s)}<button class="danger" data-action="delete">Delete</button>
      </form>
    </div>
  </td>`;
}

export function schedulesPage(
  viewer: Viewer,
  schedules: readonly Schedule[],
  options: { limit: number; now: Micros; message: Html | null },
): Html {
  const { limit, now, message } = options;
  const showTenant = viewer.principal.role !== 'tenant';
  const row = (s: Schedule): Html =>
    html`<tr data-schedule="${s.name}" ${s.paused ? html` class="paused"` : ''}>
      ${showTenant ? html`<td class="mono">${s.scope.type === 'tenant' ? s.scope.tenant : 'system'}</td>` : ''}
      <td class="mono">${s.name}</td>
      <td class="mono">
        ${s.cron === null ? `every ${number(s.everySecs ?? 0)} s` : `${s.cron} (${s.timezone ?? 'UTC'})`}
      </td>
      <td class="mono">${s.job.kind}</td>
      <td>${s.paused ? html`<span class="badge">paused</span>` : 'active'}</td>
      <td>${s.nextDueAt === null ? '' : when(s.nextDueAt, now)}</td>
      <td>${s.lastDueAt === null ? '' : when(s.lastDueAt, now)}</td>
      ${actions(viewer, s)}
    </tr>`;
  return page({
    title: 'Schedules',
    section: 'schedules',
    viewer,
    body: html`<div class="heading">
        <h1>Schedules</h1>
        <a class="button primary" href="/schedules/new" id="new-schedule">New schedule</a>
        ${liveBadge()}
      </div>
      ${message ?? ''}
      <div id="live-list" data-live="${LIVE_EVERY_SAMPLE}">
        <p class="hint">
          ${number(schedules.length)}
          schedule${schedules.length === 1 ? '' : 's'}${
            schedules.length >= limit ? html` (the first ${number(limit)})` : ''
          }.
          Each due time enqueues one job; after downtime, one job for the latest missed time. Run now enqueues one more
          without moving the next due time. Also <span class="mono">telha schedules</span>.
        </p>
        ${
          schedules.length === 0
            ? html`<p class="empty">No schedules.</p>`
            : html`<table class="grid">
                <thead>
                  <tr>
                    ${showTenant ? html`<th>Tenant</th>` : ''}
                    <th>Name</th>
                    <th>When</th>
                    <th>Kind</th>
                    <th>State</th>
                    <th>Next due</th>
                    <th>Last due</th>
                    <th></th>
                  </tr>
                </thead>
                <tbody>
                  ${schedules.map(row)}
                </tbody>
              </table>`
        }
      </div>`,
  });
}

/** What an action did, said above the list after its redirect. */
export const SCHEDULE_DONE = ['created', 'updated', 'paused', 'resumed', 'deleted', 'ran'] as const;
export type ScheduleDone = (typeof SCHEDULE_DONE)[number];

export function scheduleDoneNotice(done: ScheduleDone, name: string, jobId: string | null): Html {
  switch (done) {
    case 'created':
      return notice('ok', html`Schedule <b>${name}</b> created.`);
    case 'updated':
      return notice('ok', html`Schedule <b>${name}</b> saved.`);
    case 'paused':
      return notice('ok', html`Schedule <b>${name}</b> paused: it does not fire until resumed.`);
    case 'resumed':
      return notice('ok', html`Schedule <b>${name}</b> resumed from its next due time, with no catch-up.`);
    case 'deleted':
      return notice('ok', html`Schedule <b>${name}</b> deleted; the jobs it enqueued stay.`);
    case 'ran':
      return notice(
        'ok',
        html`Enqueued ${jobId === null ? 'a job' : html`job <a class="mono" href="/jobs/${jobId}">${jobId}</a>`} from
          schedule <b>${name}</b>; its next due time stays.`,
      );
    default:
      return done satisfies never;
  }
}
