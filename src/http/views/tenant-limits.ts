/**
 * The overview's tenant limits panel (operators): each limit with its tenant's leased jobs and
 * tokens, a Clear button, and a form to set or replace one (`telha tenants limit set`).
 */
import { formatRate } from '../../core/rate.ts';
import type { TenantLimitStatus } from '../../core/tenant-limits.ts';
import { html, type Html } from '../html.ts';
import type { Refusal } from './controls.ts';
import { csrfField, notice, number, type Viewer } from './layout.ts';

export function tenantLimitsPanel(viewer: Viewer, limits: readonly TenantLimitStatus[], refused: Refusal | null): Html {
  const mine = refused?.panel === 'tenant-limits' ? refused : null;
  const typed = (name: string): string => mine?.values[name] ?? '';
  return html`<section class="panel" id="tenant-limits">
    <h2>
      Tenant limits
      <span class="hint"
        >a tenant's jobs leased at once, its leases per period (e.g. 100/s), and its weight in the fleet's fair order;
        empty means no bound (telha tenants limit)</span
      >
    </h2>
    ${mine === null ? '' : notice('error', mine.message)}
    ${
      limits.length === 0
        ? html`<p class="empty">No tenant limits.</p>`
        : html`<table class="grid">
            <thead>
              <tr>
                <th>Tenant</th>
                <th class="num">Weight</th>
                <th class="num">Leased</th>
                <th class="num">Concurrency</th>
                <th>Rate</th>
                <th class="num">Tokens</th>
                <th>By</th>
                <th></th>
              </tr>
            </thead>
            <tbody>
              ${limits.map(
                (l) =>
                  html`<tr data-tenant="${l.tenant}">
                    <td class="mono">${l.tenant}</td>
                    <td class="num">${number(l.weight)}</td>
                    <td class="num">${number(l.leased)}</td>
                    <td class="num">${l.concurrency === null ? '–' : number(l.concurrency)}</td>
                    <td>${l.rate === null ? '–' : formatRate(l.rate)}</td>
                    <td class="num">${l.tokens === null ? '–' : number(l.tokens)}</td>
                    <td>${l.by}</td>
                    <td class="actions">
                      <form method="post" action="/tenant-limits/clear" class="inline">
                        ${csrfField(viewer)}<input type="hidden" name="tenant" value="${l.tenant}" /><button
                          class="subtle"
                        >
                          Clear
                        </button>
                      </form>
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    <form method="post" action="/tenant-limits/set" class="filters control" id="tenant-limit-form">
      ${csrfField(viewer)}
      <label>Tenant <input name="tenant" value="${typed('tenant')}" placeholder="acme" required /></label>
      <label>Weight <input name="weight" inputmode="numeric" value="${typed('weight')}" placeholder="1" /></label>
      <label
        >Concurrency <input name="concurrency" inputmode="numeric" value="${typed('concurrency')}" placeholder="10"
      /></label>
      <label>Rate <input name="rate" value="${typed('rate')}" placeholder="100/s" /></label>
      <button class="primary" id="set-tenant-limit">Set tenant limit</button>
    </form>
  </section>`;
}
