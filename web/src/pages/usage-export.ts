/**
 * "Download CSV": the account's charges over a range of UTC days, one row per request or summed per group, as the
 * gateway streams it (a plain link, so the browser saves the file itself). And "Find a request": any id of a CSV
 * row (request, answer or ledger entry) opens that request's detail.
 */
import { html, render } from 'lit-html';
import type { App } from '../app.js';
import { textField } from '../forms.js';

const GROUPINGS = [
  ['', 'None: one row per request'],
  ['day', 'Day'],
  ['model', 'Model'],
  ['key', 'API key'],
  ['endpoint', 'Endpoint'],
] as const;

export function usageExportSection(container: HTMLElement, app: App): void {
  const today = new Date().toISOString().slice(0, 10);
  let from = `${today.slice(0, 7)}-01`;
  let to = today;
  let groupBy = '';

  const rangeError = () => (!from || !to ? 'Choose both days.' : from > to ? "'From' must not be after 'To'." : '');

  function href(format: 'csv' | 'json'): string {
    const query = new URLSearchParams({ from, to, format });
    if (groupBy) query.set('group_by', groupBy);
    return `/dashboard/api/usage/export?${query}`;
  }

  const download = (format: 'csv' | 'json', label: string, kind: string) =>
    rangeError()
      ? html`<a class="button ${kind}" aria-disabled="true" role="link">${label}</a>`
      : html`<a class="button ${kind}" href=${href(format)} download>${label}</a>`;

  const changed = (set: (value: string) => void) => (event: Event) => {
    set((event.target as HTMLInputElement | HTMLSelectElement).value);
    draw();
  };

  function find(event: SubmitEvent) {
    event.preventDefault();
    const id = textField(new FormData(event.target as HTMLFormElement), 'id').trim();
    if (id) app.navigate(`/requests/${encodeURIComponent(id)}`);
  }

  function draw() {
    const error = rangeError();
    render(
      html`
        <section class="card" aria-labelledby="export-heading">
          <h2 id="export-heading">Download usage</h2>
          <p class="help">
            Every charge of the chosen UTC days, with its request id, answer id and ledger entry, tokens and exact cost.
          </p>
          <div class="filters">
            <label>From <input type="date" name="from" .value=${from} @change=${changed((v) => (from = v))} /></label>
            <label>To <input type="date" name="to" .value=${to} @change=${changed((v) => (to = v))} /></label>
            <label
              >Group by
              <select name="group_by" @change=${changed((v) => (groupBy = v))}>
                ${GROUPINGS.map(
                  ([value, label]) => html`<option value=${value} ?selected=${value === groupBy}>${label}</option>`,
                )}
              </select>
            </label>
            <div class="actions tight">
              ${download('csv', 'Download CSV', 'primary')} ${download('json', 'Download JSON', 'secondary')}
            </div>
          </div>
          ${error ? html`<p class="error" role="alert">${error}</p>` : null}
          <h3>Find a request</h3>
          <form class="filters" @submit=${find}>
            <label
              >Request, answer or ledger entry id
              <input name="id" required autocomplete="off" spellcheck="false" class="mono" />
            </label>
            <button type="submit" class="secondary">Show request</button>
          </form>
        </section>
      `,
      container,
    );
  }

  draw();
}
