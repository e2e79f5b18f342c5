/** Schedules, read-only: what fires when, and what it enqueues. Changes go through gRPC, the SDK or the CLI. */
import type { Schedule } from '../../core/schedules.ts';
import type { Micros } from '../../core/types.ts';
import { html, type Html } from '../html.ts';
import { LIVE_EVERY_SAMPLE, liveBadge, number, page, when, type Viewer } from './layout.ts';

export function schedulesPage(viewer: Viewer, schedules: readonly Schedule[], limit: number, now: Micros): Html {
  const showTenant = viewer.principal.role !== 'tenant';
  const row = (s: Schedule): Html => html`<tr${s.paused ? html` class="paused"` : ''}>
      ${showTenant ? html`<td class="mono">${s.scope.type === 'tenant' ? s.scope.tenant : 'system'}</td>` : ''}
      <td class="mono">${s.name}</td>
      <td class="mono">${s.cron === null ? `every ${number(s.everySecs ?? 0)} s` : `${s.cron} (${s.timezone ?? 'UTC'})`}</td>
      <td class="mono">${s.job.kind}</td>
      <td>${s.paused ? html`<span class="badge">paused</span>` : 'active'}</td>
      <td>${s.nextDueAt === null ? '' : when(s.nextDueAt, now)}</td>
      <td>${s.lastDueAt === null ? '' : when(s.lastDueAt, now)}</td>
    </tr>`;
  return page({
    title: 'Schedules',
    section: 'schedules',
    viewer,
    body: html`<div class="heading">
        <h1>Schedules</h1>
        ${liveBadge()}
      </div>
      <div id="live-list" data-live="${LIVE_EVERY_SAMPLE}">
        <p class="hint">
          ${number(schedules.length)}
          schedule${schedules.length === 1 ? '' : 's'}${
            schedules.length >= limit ? html` (the first ${number(limit)})` : ''
          }.
          Each due time enqueues one job; after downtime, one job for the latest missed time. Manage them with
          <span class="mono">telha schedules</span>.
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
