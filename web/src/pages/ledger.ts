/** The ledger: every grant, top-up, recharge and debit, newest first, 20 a page; a debit links to its request. */
import { html, render } from 'lit-html';
import { api, type LedgerEntry, type List } from '../api.js';
import { count, dateTime, usd } from '../format.js';

const PAGE = 20;

export function ledgerSection(container: HTMLElement): void {
  let page: List<LedgerEntry> | undefined;
  /** Cursors of the pages before this one; the first page has none. */
  const cursors: Array<string | undefined> = [];
  let cursor: string | undefined;
  let error = '';

  async function load() {
    try {
      page = await api<List<LedgerEntry>>(
        'GET',
        `/ledger?limit=${PAGE}${cursor ? `&before=${encodeURIComponent(cursor)}` : ''}`,
      );
      error = '';
    } catch (caught) {
      error = (caught as Error).message;
    }
    draw();
  }

  const older = () => {
    cursors.push(cursor);
    cursor = page?.next_before ?? undefined;
    void load();
  };
  const newer = () => {
    cursor = cursors.pop();
    void load();
  };

  const row = (e: LedgerEntry) => html`
    <tr>
      <td data-label="Time">${dateTime(e.created)}</td>
      <td data-label="Kind"><span class="badge kind-${e.kind}">${e.kind}</span></td>
      <td data-label="Amount" class="num ${e.amount < 0 ? 'negative' : 'positive'}">${usd(e.amount)}</td>
      <td data-label="Balance after" class="num">${usd(e.balance_after)}</td>
      <td data-label="Model or note">${e.model ?? e.note ?? ''}</td>
      <td data-label="Tokens" class="num">
        ${e.prompt_tokens === null ? '' : count((e.prompt_tokens ?? 0) + (e.completion_tokens ?? 0))}
      </td>
      <td data-label="Request"><code class="small">${e.request_id ?? ''}</code></td>
      <td data-label="">
        ${
          e.kind === 'debit' && e.request_id
            ? html`<a href="/dashboard/requests/${encodeURIComponent(e.id)}"
                >Details<span class="visually-hidden"> of request ${e.request_id}</span></a
              >`
            : null
        }
      </td>
    </tr>
  `;

  function draw() {
    render(
      html`
        <section class="card" aria-labelledby="ledger-heading">
          <h2 id="ledger-heading">Ledger</h2>
          ${error ? html`<p class="error" role="alert">${error}</p>` : null}
          ${
            !page
              ? html`<p class="loading">Loading…</p>`
              : html`<div class="table-wrap">
                    <table id="ledger" class="cards-on-mobile">
                      <caption class="visually-hidden">
                        Ledger entries, newest first
                      </caption>
                      <thead>
                        <tr>
                          <th>Time</th>
                          <th>Kind</th>
                          <th class="num">Amount</th>
                          <th class="num">Balance after</th>
                          <th>Model or note</th>
                          <th class="num">Tokens</th>
                          <th>Request</th>
                          <th><span class="visually-hidden">Details</span></th>
                        </tr>
                      </thead>
                      <tbody>
                        ${page.data.map(row)}
                      </tbody>
                    </table>
                  </div>
                  <nav class="pager" aria-label="Ledger pages">
                    <button type="button" class="secondary small" ?disabled=${cursors.length === 0} @click=${newer}>
                      Newer
                    </button>
                    <span class="muted small">Page ${cursors.length + 1}</span>
                    <button type="button" class="secondary small" ?disabled=${!page.has_more} @click=${older}>
                      Older
                    </button>
                  </nav>`
          }
        </section>
      `,
      container,
    );
  }

  draw();
  void load();
}
