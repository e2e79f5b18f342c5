/** Jobs leased now, by worker: a stuck worker shows as leases past their deadline or without heartbeats. */
import type { JobRecord, Micros } from '../../core/types.ts';
import { href, html, type Html } from '../html.ts';
import { LIVE_EVERY_SAMPLE, liveBadge, number, span, when, type Viewer, page } from './layout.ts';

function lastOf(job: JobRecord, transition: string): { at: Micros; detail: string | null } | null {
  for (let i = job.events.length - 1; i >= 0; i--) {
    const event = job.events[i];
    if (event?.transition === transition) return event;
    // Events before the current lease belong to earlier attempts.
    if (event?.transition === 'leased') return transition === 'leased' ? event : null;
  }
  return null;
}

/**
 * Heartbeats of the current lease, those that carried progress among them: runs of each fold
 * into one event with a count, and a checkpoint or a progress report between them splits a run.
 */
function heartbeats(job: JobRecord): number {
  let total = 0;
  for (let i = job.events.length - 1; i >= 0; i--) {
    const event = job.events[i];
    if (event === undefined || event.transition === 'leased') break;
    if (event.transition === 'extended' || event.transition === 'progress') {
      total += Number(/count=(\d+)$/.exec(event.detail ?? '')?.[1] ?? '1');
    }
  }
  return total;
}

export function leasesPage(
  viewer: Viewer,
  jobs: readonly JobRecord[],
  worker: string | null,
  limit: number,
  now: Micros,
): Html {
  const byWorker = new Map<string, JobRecord[]>();
  for (const job of jobs) {
    const list = byWorker.get(job.workerId ?? '') ?? [];
    list.push(job);
    byWorker.set(job.workerId ?? '', list);
  }
  const workers = [...byWorker.entries()].sort((a, b) => b[1].length - a[1].length || (a[0] < b[0] ? -1 : 1));
  const showTenant = viewer.principal.role !== 'tenant';
  const section = ([id, held]: [string, JobRecord[]]): Html => {
    const overdue = held.filter((j) => j.leaseDeadline !== null && j.leaseDeadline <= now).length;
    return html`<section class="panel worker${overdue > 0 ? ' stuck' : ''}">
      <h2>
        <a class="mono" href="${href('/leases', { worker: id })}">${id}</a>
        <span class="hint">${number(held.length)} lease${held.length === 1 ? '' : 's'}</span>${
          overdue > 0 ? html` <span class="badge dead">${number(overdue)} past deadline</span>` : ''
        }
      </h2>
      <table class="grid">
        <thead>
          <tr>
            <th>Job</th>
            <th>Kind</th>
            ${showTenant ? html`<th>Tenant</th>` : ''}
            <th class="num">Generation</th>
            <th>Leased</th>
            <th class="num">Heartbeats</th>
            <th>Deadline</th>
          </tr>
        </thead>
        <tbody>
          ${held.map((job) => {
            const leased = lastOf(job, 'leased');
            const late = job.leaseDeadline !== null && job.leaseDeadline <= now;
            return html`<tr${late ? html` class="late"` : ''}>
      <td><a class="mono id" href="${href(`/jobs/${job.jobId}`)}">${job.jobId}</a></td>
      <td class="mono">${job.kind}</td>
      ${showTenant ? html`<td class="mono">${job.tenant ?? 'system'}</td>` : ''}
      <td class="num">${job.leaseGeneration}</td>
      <td>${leased === null ? '' : when(leased.at, now)}</td>
      <td class="num">${number(heartbeats(job))}</td>
      <td>${job.leaseDeadline === null ? '' : late ? html`<b class="late">overdue by ${span(now - job.leaseDeadline)}</b>` : when(job.leaseDeadline, now)}</td>
    </tr>`;
          })}
        </tbody>
      </table>
    </section>`;
  };
  return page({
    title: 'Leases',
    section: 'leases',
    viewer,
    body: html`<div class="heading">
        <h1>Leases${worker === null ? '' : html` of <span class="mono">${worker}</span>`}</h1>
        ${liveBadge()} ${worker === null ? '' : html`<a class="button subtle" href="/leases">Every worker</a>`}
      </div>
      <div id="live-list" data-live="${LIVE_EVERY_SAMPLE}">
        <p class="hint">
          ${number(jobs.length)} job${jobs.length === 1 ? '' : 's'} leased now by ${number(byWorker.size)}
          worker${byWorker.size === 1 ? '' : 's'}${jobs.length >= limit ? html` (the first ${number(limit)})` : ''}. A
          lease past its deadline is reclaimed at the reaper's next pass.
        </p>
        ${workers.length === 0 ? html`<p class="empty">No job is leased.</p>` : workers.map(section)}
      </div>`,
  });
}
