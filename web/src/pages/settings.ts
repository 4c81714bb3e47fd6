/** Auto-recharge and low-balance thresholds: the settings an account's own user may change. */
import { html, nothing, render } from 'lit-html';
import { ApiError, api, type Overview } from '../api.js';
import { textField } from '../forms.js';

export function settingsSection(container: HTMLElement): void {
  let overview: Overview | undefined;
  let message = '';
  let error = '';

  async function load() {
    overview = await api<Overview>('GET', '/overview');
    draw();
  }

  async function save(event: SubmitEvent) {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const thresholds = textField(form, 'thresholds')
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    if (thresholds.some((t) => !/^\d+(\.\d+)?$/.test(t))) {
      error = 'Low-balance thresholds must be USD amounts separated by commas, e.g. 1, 5.';
      message = '';
      return draw();
    }
    // Auto-recharge the user may not change is left out: the server would refuse it.
    const autoRecharge = overview?.billing.auto_recharge.available
      ? {
          auto_recharge: {
            enabled: form.get('enabled') === 'on',
            threshold: Number(form.get('threshold') || 0),
            amount: Number(form.get('amount') || 0),
          },
        }
      : {};
    try {
      overview = await api<Overview>('PATCH', '/settings', {
        ...autoRecharge,
        low_balance_thresholds: thresholds.map(Number),
      });
      error = '';
      message = 'Settings saved.';
    } catch (caught) {
      error = caught instanceof ApiError ? caught.message : 'The settings could not be saved.';
      message = '';
    }
    draw();
  }

  function draw() {
    const o = overview;
    const locked = !o?.billing.auto_recharge.available;
    render(
      html`
        <section class="card" aria-labelledby="settings-heading">
          <h2 id="settings-heading">Billing settings</h2>
          ${
            o
              ? html`<form class="grid-form" @submit=${save}>
                  <label class="inline"
                    ><input
                      type="checkbox"
                      name="enabled"
                      ?checked=${o.billing.auto_recharge.enabled}
                      ?disabled=${locked}
                      aria-describedby=${locked ? 'recharge-help' : nothing}
                    />
                    Recharge automatically</label
                  >
                  ${locked ? html`<p id="recharge-help" class="help">${o.billing.auto_recharge.unavailable_reason}</p>` : null}
                  ${o.billing.auto_recharge.disabled_reason ? html`<p id="recharge-disabled" class="help" role="status">${o.billing.auto_recharge.disabled_reason}</p>` : null}
                  <label for="recharge-threshold">When the balance falls below (USD)</label>
                  <input
                    id="recharge-threshold"
                    name="threshold"
                    type="number"
                    min="0"
                    step="0.01"
                    inputmode="decimal"
                    ?disabled=${locked}
                    .value=${String(o.billing.auto_recharge.threshold)}
                  />
                  <label for="recharge-amount">Add this amount (USD)</label>
                  <input
                    id="recharge-amount"
                    name="amount"
                    type="number"
                    min="0"
                    step="0.01"
                    inputmode="decimal"
                    ?disabled=${locked}
                    .value=${String(o.billing.auto_recharge.amount)}
                  />
                  <label for="low-balance">Low-balance alerts at (USD, comma-separated)</label>
                  <input
                    id="low-balance"
                    name="thresholds"
                    inputmode="decimal"
                    .value=${o.low_balance_thresholds.join(', ')}
                    aria-describedby="low-balance-help"
                  />
                  <p id="low-balance-help" class="help">
                    A <code>credit.low_balance</code> webhook event fires when the balance drops below each amount.
                  </p>
                  ${error ? html`<p class="error" role="alert">${error}</p>` : null}
                  <p class="status" role="status">${message}</p>
                  <div class="actions"><button type="submit">Save settings</button></div>
                </form>`
              : html`<p class="loading">Loading…</p>`
          }
        </section>
      `,
      container,
    );
  }

  draw();
  void load().catch((caught: Error) => ((error = caught.message), draw()));
}
