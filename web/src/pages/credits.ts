/**
 * Credits & usage: balance, today and this month, buying credit, limits and plan, 30-day charts, settings, the usage
 * download and the ledger.
 */
import type { Chart } from 'chart.js';
import { html, render } from 'lit-html';
import { api, type Overview, type UsageHistory, type UsageTotals } from '../api.js';
import type { Page } from '../app.js';
import { dailyChart, modelChart } from '../charts.js';
import { count, isoDate, plural, usd } from '../format.js';
import { ledgerSection } from './ledger.js';
import { purchasesSection } from './purchases.js';
import { settingsSection } from './settings.js';
import { usageExportSection } from './usage-export.js';

export const creditsPage: Page = (container, app) => {
  let environment: 'live' | 'test' = 'live';
  let overview: Overview | undefined;
  let history: UsageHistory | undefined;
  let error = '';
  let charts: Chart[] = [];

  async function load() {
    try {
      [overview, history] = await Promise.all([
        api<Overview>('GET', `/overview?environment=${environment}`),
        api<UsageHistory>('GET', `/usage?environment=${environment}`),
      ]);
      error = '';
    } catch (caught) {
      error = (caught as Error).message;
    }
    draw();
    drawCharts();
  }

  function drawCharts() {
    for (const chart of charts) chart.destroy();
    charts = [];
    if (!history) return;
    const daily = container.querySelector<HTMLCanvasElement>('#daily-chart');
    const models = container.querySelector<HTMLCanvasElement>('#model-chart');
    if (daily) charts.push(dailyChart(daily, history));
    if (models && history.models.length) charts.push(modelChart(models, history));
  }

  const totals = (label: string, t: UsageTotals) => html`
    <div class="stat">
      <h3>${label}</h3>
      <p class="figure">${usd(t.credits_used)}</p>
      <p class="muted">${plural(t.requests, 'request')} · ${plural(t.tokens.total, 'token')}</p>
      <p class="muted small">${count(t.tokens.prompt)} prompt · ${count(t.tokens.completion)} completion</p>
    </div>
  `;

  function summary(o: Overview) {
    return html`
      <div class="stats">
        <div class="stat highlight">
          <h3>Balance</h3>
          <p class="figure" data-testid="balance">${usd(o.balance.credits)}</p>
          <p class="muted">${o.balance.currency} prepaid credit</p>
        </div>
        ${totals('Today', o.usage.daily)} ${totals('This month', o.usage.monthly)}
        <div class="stat">
          <h3>Plan</h3>
          <p class="figure plan">${o.billing.plan.replaceAll('_', ' ')}</p>
          <p class="muted">Next billing date ${isoDate(o.billing.next_billing_date)}</p>
        </div>
      </div>
      <section class="card" aria-labelledby="limits-heading">
        <h2 id="limits-heading">Limits of your plan</h2>
        <dl class="facts">
          <div>
            <dt>Requests per minute</dt>
            <dd>${count(o.limits.rate_limit.requests_per_minute)}</dd>
          </div>
          <div>
            <dt>Tokens per minute</dt>
            <dd>${count(o.limits.rate_limit.tokens_per_minute)}</dd>
          </div>
          <div>
            <dt>Daily limit</dt>
            <dd>${o.limits.daily_limit ? usd(o.limits.daily_limit.credits) : 'None'}</dd>
          </div>
          ${
            o.limits.daily_limit
              ? html`<div>
                  <dt>Left today</dt>
                  <dd>${usd(o.limits.daily_limit.remaining)}</dd>
                </div>`
              : null
          }
        </dl>
      </section>
    `;
  }

  function usageSection(h: UsageHistory) {
    return html`
      <section class="card" aria-labelledby="usage-heading">
        <h2 id="usage-heading">Last 30 days</h2>
        <div class="chart tall">
          <canvas id="daily-chart" role="img" aria-label="Daily spend and tokens over the last 30 days"></canvas>
        </div>
        <h3>By model</h3>
        ${
          h.models.length
            ? html`<div class="chart"><canvas id="model-chart" role="img" aria-label="Spend per model"></canvas></div>
                <div class="table-wrap">
                  <table id="model-usage" class="cards-on-mobile">
                    <caption class="visually-hidden">
                      Usage per model over the last 30 days
                    </caption>
                    <thead>
                      <tr>
                        <th>Model</th>
                        <th class="num">Requests</th>
                        <th class="num">Prompt tokens</th>
                        <th class="num">Completion tokens</th>
                        <th class="num">Spend</th>
                      </tr>
                    </thead>
                    <tbody>
                      ${h.models.map(
                        (m) =>
                          html`<tr>
                            <td data-label="Model">${m.model}</td>
                            <td data-label="Requests" class="num">${count(m.requests)}</td>
                            <td data-label="Prompt tokens" class="num">${count(m.prompt_tokens)}</td>
                            <td data-label="Completion tokens" class="num">${count(m.completion_tokens)}</td>
                            <td data-label="Spend" class="num">${usd(m.credits)}</td>
                          </tr>`,
                      )}
                    </tbody>
                  </table>
                </div>`
            : html`<p class="muted">No requests in the last 30 days.</p>`
        }
      </section>
    `;
  }

  function draw() {
    render(
      html`
        <div class="page-head">
          <h1>Credits &amp; usage</h1>
          <label class="inline">
            Usage of
            <select
              aria-label="Usage of which keys"
              @change=${(e: Event) => ((environment = (e.target as HTMLSelectElement).value as 'live' | 'test'), void load())}
            >
              <option value="live" ?selected=${environment === 'live'}>live keys</option>
              <option value="test" ?selected=${environment === 'test'}>test keys</option>
            </select>
          </label>
        </div>
        ${error ? html`<p class="error" role="alert">${error}</p>` : null}
        ${overview ? summary(overview) : html`<p class="loading">Loading…</p>`}
        <div id="purchases-section"></div>
        ${history ? usageSection(history) : null}
        <div id="settings-section"></div>
        <div id="export-section"></div>
        <div id="ledger-section"></div>
      `,
      container,
    );
  }

  draw();
  void load();
  const stopPurchases = purchasesSection(container.querySelector('#purchases-section')!, () => {
    void load();
    ledgerSection(container.querySelector('#ledger-section')!);
  });
  settingsSection(container.querySelector('#settings-section')!);
  usageExportSection(container.querySelector('#export-section')!, app);
  ledgerSection(container.querySelector('#ledger-section')!);
  return () => {
    stopPurchases();
    charts.forEach((chart) => chart.destroy());
  };
};
