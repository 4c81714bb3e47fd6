/** The audit log: who changed what in the account, newest first; "Load more" pages back; a row opens to before/after. */
import { html, render } from 'lit-html';
import { api } from '../api.js';
import { dateTime } from '../format.js';

const PAGE = 50;

/** One entry as GET /dashboard/api/audit answers it (src/reports/audit.ts). */
interface AuditEntry {
  id: string;
  action: string;
  actor: { type: string; id: string | null; email: string | null };
  target: { type: string; id: string | null };
  before: unknown;
  after: unknown;
  ip: string | null;
  created: number;
}

export function auditPage(container: HTMLElement): void {
  const entries: AuditEntry[] = [];
  let hasMore = false;
  let loaded = false;
  let error = '';

  async function load() {
    const last = entries.at(-1);
    try {
      const page = await api<{ data: AuditEntry[]; has_more: boolean }>(
        'GET',
        `/audit?limit=${PAGE}${last ? `&after=${encodeURIComponent(last.id)}` : ''}`,
      );
      entries.push(...page.data);
      hasMore = page.has_more;
      loaded = true;
      error = '';
    } catch (caught) {
      error = (caught as Error).message;
    }
    draw();
  }

  const who = (e: AuditEntry) =>
    e.actor.email ?? (e.actor.type === 'operator' ? 'operator' : (e.actor.id ?? e.actor.type));
  const json = (value: unknown) => (value === null || value === undefined ? '—' : JSON.stringify(value, null, 2));

  const row = (e: AuditEntry) => html`
    <li class="audit-entry">
      <details>
        <summary>
          <span>${dateTime(e.created)}</span> <code>${e.action}</code>
          <span>${e.target.type} ${e.target.id ?? ''}</span>
          <span>by ${who(e)}</span> ${e.ip ? html`<span class="muted">from ${e.ip}</span>` : null}
        </summary>
        <div class="audit-change">
          <div>
            <h3>Before</h3>
            <pre>${json(e.before)}</pre>
          </div>
          <div>
            <h3>After</h3>
            <pre>${json(e.after)}</pre>
          </div>
        </div>
      </details>
    </li>
  `;

  function draw() {
    render(
      html`
        <section class="card" aria-labelledby="audit-heading">
          <h2 id="audit-heading">Audit log</h2>
          ${error ? html`<p class="error" role="alert">${error}</p>` : null}
          ${
            !loaded
              ? html`<p class="loading">Loading…</p>`
              : entries.length === 0
                ? html`<p>No changes recorded yet.</p>`
                : html`<ol id="audit" class="plain-list">
                    ${entries.map(row)}
                  </ol>`
          }
          ${hasMore ? html`<button type="button" @click=${() => void load()}>Load more</button>` : null}
        </section>
      `,
      container,
    );
  }

  draw();
  void load();
}
