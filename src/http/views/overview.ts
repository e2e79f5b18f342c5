/** The overview: counts by state, kind and tenant, and the live charts. */
import { limitLane, type KindLimitStatus } from '../../core/kind-limits.ts';
import { pauseCoversKind, type Pause } from '../../core/pauses.ts';
import { JobState, type CountRow } from '../../core/types.ts';
import { href, html, type Html } from '../html.ts';
import { blockedKeysPanel, limitsPanel, pausesPanel, type Refusal } from './controls.ts';
import type { BlockedKey } from '../../core/ordered-keys.ts';
import { tenantLimitsPanel } from './tenant-limits.ts';
import type { TenantLimitStatus } from '../../core/tenant-limits.ts';
import { number, page, type Viewer } from './layout.ts';

/** The states an operator watches, in the order a job moves through them. */
export const SHOWN_STATES = [
  { state: JobState.Pending, name: 'pending', label: 'Pending' },
  { state: JobState.Leased, name: 'leased', label: 'Leased' },
  { state: JobState.Completed, name: 'completed', label: 'Completed' },
  { state: JobState.Dead, name: 'dead', label: 'Dead' },
  { state: JobState.Cancelled, name: 'cancelled', label: 'Cancelled' },
] as const;

export interface OverviewData {
  readonly counts: readonly CountRow[];
  /** Per tenant, for operators; `null` for a tenant's own view. */
  readonly tenants: readonly { tenant: string; counts: readonly CountRow[] }[] | null;
  readonly backend: string;
  /** Pauses that hold back work the viewer sees; `null` when the viewer may not read pauses. */
  readonly pauses?: readonly Pause[] | null;
  /** Kind limits with their lanes now; `null` (or absent) when the viewer is not an operator. */
  readonly limits?: readonly KindLimitStatus[] | null;
  /** Blocked ordered keys the viewer may release; `null` (or absent) when it may not. */
  readonly blockedKeys?: readonly BlockedKey[] | null;
  /** Tenant limits; `null` (or absent) when the viewer is not an operator. */
  readonly tenantLimits?: readonly TenantLimitStatus[] | null;
  /** A control's form the server refused, shown in its panel. */
  readonly refused?: Refusal | null;
}

/** The kind limit a kind falls under, as a badge naming its prefix. */
function limitBadge(prefix: string | null): Html | '' {
  if (prefix === null) return '';
  return html` <span class="badge limited" title="under the kind limit ${prefix}: see Limits below">limited</span>`;
}

function totals(rows: readonly CountRow[]): Map<JobState, number> {
  const out = new Map<JobState, number>();
  for (const row of rows) out.set(row.state, (out.get(row.state) ?? 0) + row.count);
  return out;
}

function stateCells(byState: Map<JobState, number>, link: (state: string) => string): Html[] {
  return SHOWN_STATES.map(({ state, name }) => {
    const n = byState.get(state) ?? 0;
    return html`<td class="num">
      ${n === 0 ? html`<span class="zero">0</span>` : html`<a href="${link(name)}">${number(n)}</a>`}
    </td>`;
  });
}

/** Rows of counts by state, each row's name and numbers linking to the jobs they count. */
function countsTable(
  label: string,
  rows: readonly (readonly [string, Map<JobState, number>])[],
  empty: string,
  filter: (name: string) => Record<string, string>,
  paused: (name: string) => boolean = () => false,
  lane: (name: string) => string | null = () => null,
): Html {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<table class="grid">
    <thead>
      <tr>
        <th>${label}</th>
        ${SHOWN_STATES.map((s) => html`<th class="num">${s.label}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        ([name, states]) =>
          html`<tr>
            <td>
              <a class="mono" href="${href('/jobs', filter(name))}">${name}</a>${
                paused(name)
                  ? html` <span class="badge paused" title="paused in some scope: see Paused below">paused</span>`
                  : ''
              }${limitBadge(lane(name))}
            </td>
            ${stateCells(states, (state) => href('/jobs', { ...filter(name), state }))}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

export function overviewPage(viewer: Viewer, data: OverviewData): Html {
  const byState = totals(data.counts);
  const byKind = new Map<string, Map<JobState, number>>();
  for (const row of data.counts) {
    const kind = byKind.get(row.kind) ?? new Map<JobState, number>();
    kind.set(row.state, (kind.get(row.state) ?? 0) + row.count);
    byKind.set(row.kind, kind);
  }
  const cards = SHOWN_STATES.map(
    ({ state, name, label }) =>
      html`<a class="card ${name}" href="${href('/jobs', { state: name })}">
        <span class="label">${label}</span>
        <span class="value" data-count="${name}">${number(byState.get(state) ?? 0)}</span>
      </a>`,
  );
  const kinds = [...byKind.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const scopeNote = viewer.principal.role === 'tenant' ? html` of tenant <b>${viewer.principal.tenant}</b>` : '';
  return page({
    title: 'Overview',
    section: 'overview',
    viewer,
    body: html`<div class="heading">
        <h1>Overview${scopeNote}</h1>
        <span class="live" id="live" data-state="connecting"
          ><span class="dot"></span><span id="live-text">connecting…</span></span
        >
      </div>
      <section class="cards">${cards}</section>
      <section class="charts">
        <figure class="chart-box">
          <figcaption>Throughput, jobs/s <span class="hint">last hour</span></figcaption>
          <div class="chart" id="chart-throughput" data-series="enqueued completed failed dead"></div>
        </figure>
        <figure class="chart-box">
          <figcaption>
            Oldest Pending job, age in s
            <span class="hint">${viewer.principal.role === 'tenant' ? 'shown to operators only' : 'last hour'}</span>
          </figcaption>
          <div class="chart" id="chart-age" data-series="oldestPendingAge"></div>
        </figure>
      </section>
      <section class="panel">
        <h2>By kind</h2>
        ${countsTable(
          'Kind',
          kinds,
          'No jobs yet.',
          (kind) => ({ kind }),
          (kind) => (data.pauses ?? []).some((p) => pauseCoversKind(p.kindPrefix, kind)),
          (kind) => limitLane(data.limits ?? [], kind),
        )}
      </section>
      ${
        data.pauses === null || data.pauses === undefined
          ? ''
          : pausesPanel(
              viewer,
              data.pauses,
              (data.tenants ?? []).map((t) => t.tenant),
              data.refused ?? null,
            )
      }
      ${data.limits === null || data.limits === undefined ? '' : limitsPanel(viewer, data.limits, data.refused ?? null)}
      ${
        data.blockedKeys === null || data.blockedKeys === undefined
          ? ''
          : blockedKeysPanel(viewer, data.blockedKeys, data.refused ?? null)
      }
      ${
        data.tenantLimits === null || data.tenantLimits === undefined
          ? ''
          : tenantLimitsPanel(viewer, data.tenantLimits, data.refused ?? null)
      }
      ${
        data.tenants === null
          ? ''
          : html`<section class="panel">
              <h2>
                By tenant <span class="hint">tenants named by tokens or seen by this server since it started</span>
              </h2>
              ${countsTable(
                'Tenant',
                data.tenants.map(({ tenant, counts }) => [tenant, totals(counts)] as const),
                'No tenants seen yet.',
                (tenant) => ({ tenant }),
              )}
            </section>`
      }
      <p class="footnote">
        Store: ${data.backend}. Counts are at most a few seconds old; the cards and charts update live.
      </p>`,
  });
}
