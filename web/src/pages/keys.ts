/**
 * API Keys: the list with each key's limit, expiry, rate limits, allowed addresses and owner; Create New Key; the new
 * key shown once; Edit (a dialog with the governance fields) and Revoke with confirmation.
 */
import { html, render } from 'lit-html';
import { keyed } from 'lit-html/directives/keyed.js';
import {
  ApiError,
  PERMISSIONS,
  api,
  type ApiKey,
  type List,
  type Model,
  type Permission,
  type UsageTotals,
} from '../api.js';
import type { Page } from '../app.js';
import { PERMISSION_LABELS, count, date, dateTime, isoDate, usd } from '../format.js';
import { textField } from '../forms.js';

const RESETS = { daily: 'daily', weekly: 'weekly', monthly: 'monthly' } as const;

export const keysPage: Page = (container, app) => {
  let keys: ApiKey[] | undefined;
  let models: Model[] = [];
  let creating = false;
  let permission = 'full';
  let formError = '';
  let loadError = '';
  let created: { key: ApiKey; first: boolean } | undefined;
  let copied = false;
  let revoking: ApiKey | undefined;
  let editing: ApiKey | undefined;
  /** Each opening of the edit dialog draws a fresh form, filled from the key as listed. */
  let editOpenings = 0;
  let editError = '';
  let notice = '';
  let noticeFailed = false;
  const first = app.takeFirstKey();
  if (first) created = { key: first, first: true };
  // Owners and admins make any key; members only project and read-only ones (the server holds the same rule).
  const capabilities = (app.session as { capabilities?: string[] }).capabilities;
  const everyKey = capabilities === undefined || capabilities.includes('keys');
  const permissions: readonly Permission[] = everyKey ? PERMISSIONS : ['project', 'read_only'];

  async function load() {
    try {
      keys = (await api<List<ApiKey>>('GET', '/keys')).data;
      loadError = '';
    } catch (error) {
      loadError = (error as Error).message;
    }
    draw();
  }

  async function openForm() {
    creating = true;
    permission = permissions[0]!;
    formError = '';
    draw();
    container.querySelector<HTMLInputElement>('#key-name')?.focus();
    if (!models.length) {
      models = (await api<List<Model>>('GET', '/models?active_only=false').catch(() => ({ data: [] }))).data;
      draw();
    }
  }

  async function create(event: SubmitEvent) {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const body: Record<string, unknown> = {
      name: textField(form, 'name'),
      environment: form.get('environment'),
      permissions: form.get('permissions'),
      ...governance(form, false),
    };
    if (body.permissions === 'project') body.models = form.getAll('models').map(String);
    try {
      const key = await api<ApiKey>('POST', '/keys', body);
      created = { key, first: false };
      copied = false;
      creating = false;
      notice = `Key “${key.name}” created.`;
      noticeFailed = false;
      await load();
      container.querySelector<HTMLElement>('#new-key-heading')?.focus();
    } catch (error) {
      formError = error instanceof ApiError ? error.message : 'The key could not be created.';
      draw();
    }
  }

  async function copy() {
    const input = container.querySelector<HTMLInputElement>('#new-key-value')!;
    try {
      await navigator.clipboard.writeText(input.value);
    } catch {
      input.select(); // Clipboard API refused (no permission): leave the key selected for Ctrl+C.
    }
    copied = true;
    draw();
  }

  function askRevoke(key: ApiKey) {
    revoking = key;
    draw();
    container.querySelector<HTMLDialogElement>('#revoke-dialog')?.showModal();
  }

  async function confirmRevoke() {
    const key = revoking!;
    container.querySelector<HTMLDialogElement>('#revoke-dialog')?.close();
    revoking = undefined;
    try {
      await api('POST', `/keys/${encodeURIComponent(key.id)}/revoke`);
      notice = `Key “${key.name}” revoked.`;
      noticeFailed = false;
    } catch (error) {
      notice = `The key could not be revoked: ${(error as Error).message}`;
      noticeFailed = true;
    }
    await load();
  }

  function openEdit(key: ApiKey) {
    editing = key;
    editOpenings++;
    editError = '';
    draw();
    container.querySelector<HTMLDialogElement>('#edit-dialog')?.showModal();
    container.querySelector<HTMLInputElement>('#edit-name')?.focus();
  }

  async function saveEdit(event: SubmitEvent) {
    event.preventDefault();
    const key = editing!;
    const form = new FormData(event.target as HTMLFormElement);
    try {
      await api('PATCH', `/keys/${encodeURIComponent(key.id)}`, {
        name: textField(form, 'name'),
        ...governance(form, true),
      });
      container.querySelector<HTMLDialogElement>('#edit-dialog')?.close();
      editing = undefined;
      notice = `Key “${textField(form, 'name')}” saved.`;
      noticeFailed = false;
      await load();
    } catch (error) {
      editError = error instanceof ApiError ? error.message : 'The key could not be saved.';
      draw();
    }
  }

  const newKeyPanel = (entry: { key: ApiKey; first: boolean }) => html`
    <section class="card new-key" aria-labelledby="new-key-heading">
      <h2 id="new-key-heading" tabindex="-1">${entry.first ? 'Your first API key' : 'Your new API key'}</h2>
      <p class="warning" role="note">
        <strong>Copy this key now.</strong> It is shown only once and cannot be shown again; if you lose it, create a
        new key.
      </p>
      <div class="copy-row">
        <label class="visually-hidden" for="new-key-value">API key ${entry.key.name}</label>
        <input
          id="new-key-value"
          class="mono"
          readonly
          .value=${entry.key.key ?? ''}
          @focus=${(e: Event) => (e.target as HTMLInputElement).select()}
        />
        <button type="button" @click=${copy}>${copied ? 'Copied' : 'Copy'}</button>
      </div>
      <p class="help">
        Use it from server-side code: <code>Authorization: Bearer &lt;key&gt;</code> with base URL
        <code>${location.origin}/v1</code>.
      </p>
      <button type="button" class="secondary" @click=${() => ((created = undefined), draw())}>
        I have stored the key
      </button>
    </section>
  `;

  const createForm = () => html`
    <section class="card" aria-labelledby="create-heading">
      <h2 id="create-heading">Create New Key</h2>
      <form @submit=${create} class="grid-form">
        <label for="key-name">Name</label>
        <input id="key-name" name="name" maxlength="200" placeholder="e.g. production backend" />
        <fieldset>
          <legend>Environment</legend>
          <label class="inline"><input type="radio" name="environment" value="live" checked /> Live (billed)</label>
          <label class="inline"><input type="radio" name="environment" value="test" /> Test (sandbox, free)</label>
        </fieldset>
        <label for="key-permissions">Permissions</label>
        <select
          id="key-permissions"
          name="permissions"
          @change=${(e: Event) => ((permission = (e.target as HTMLSelectElement).value), draw())}
        >
          ${permissions.map((p) => html`<option value=${p} ?selected=${p === permission}>${PERMISSION_DESCRIPTIONS[p]}</option>`)}
        </select>
        ${
          permission === 'project'
            ? html`<fieldset>
                <legend>Allowed models <span class="muted">(none selected = all)</span></legend>
                <div class="checklist">
                  ${models.map((m) => html`<label class="inline"><input type="checkbox" name="models" value=${m.id} /> ${m.id}</label>`)}
                </div>
              </fieldset>`
            : null
        }
        ${governanceFields('new')} ${formError ? html`<p class="error" role="alert">${formError}</p>` : null}
        <div class="actions">
          <button type="submit">Create key</button>
          <button type="button" class="secondary" @click=${() => ((creating = false), draw())}>Cancel</button>
        </div>
      </form>
    </section>
  `;

  const keyRow = (key: ApiKey) => html`
    <tr class=${key.revoked ? 'revoked' : ''}>
      <td data-label="Name">
        ${key.name}
        <div class="muted small key-owner">
          ${key.owner ? `by ${key.owner.email ?? key.owner.id}` : 'by the operator'}
        </div>
      </td>
      <td data-label="Key">
        <code>${key.hint}</code>
        <div><span class="badge ${key.environment}">${key.environment}</span></div>
      </td>
      <td data-label="Permissions">
        <div>
          ${PERMISSION_LABELS[key.permissions]}
          ${
            key.permissions === 'project'
              ? html`<div class="muted small">${key.models.length ? key.models.join(', ') : 'all models'}</div>`
              : null
          }
        </div>
      </td>
      <td data-label="Limit" class="key-limit">${limitCell(key)}</td>
      <td data-label="Restrictions" class="key-restrictions">${restrictionsCell(key)}</td>
      <td data-label="Last used">
        ${dateTime(key.last_used)}
        <div class="muted small">created ${date(key.created)}</div>
      </td>
      <td data-label="Today">${usageCell(key.activity?.daily)}</td>
      <td data-label="This month">${usageCell(key.activity?.monthly)}</td>
      <td data-label="Status">${statusBadge(key)}</td>
      <td data-label="">
        ${
          key.revoked
            ? null
            : html`<div class="actions tight">
                <button type="button" class="secondary small" @click=${() => openEdit(key)}>
                  Edit<span class="visually-hidden"> ${key.name}</span>
                </button>
                <button type="button" class="danger small" @click=${() => askRevoke(key)}>
                  Revoke<span class="visually-hidden"> ${key.name}</span>
                </button>
              </div>`
        }
      </td>
    </tr>
  `;

  const editDialog = () => html`
    <dialog id="edit-dialog" aria-labelledby="edit-title" @close=${() => (editing = undefined)}>
      ${
        editing
          ? keyed(
              editOpenings,
              html`<h2 id="edit-title">Edit key “${editing.name}”</h2>
                <form @submit=${saveEdit} class="grid-form">
                  <label for="edit-name">Name</label>
                  <input id="edit-name" name="name" maxlength="200" required .value=${editing.name} />
                  ${governanceFields('edit', editing)}
                  ${editError ? html`<p class="error" role="alert">${editError}</p>` : null}
                  <div class="actions">
                    <button type="submit">Save</button>
                    <button
                      type="button"
                      class="secondary"
                      @click=${() => container.querySelector<HTMLDialogElement>('#edit-dialog')?.close()}
                    >
                      Cancel
                    </button>
                  </div>
                </form>`,
            )
          : null
      }
    </dialog>
  `;

  function draw() {
    render(
      html`
        <div class="page-head">
          <h1>API Keys</h1>
          ${creating ? null : html`<button type="button" @click=${openForm}>Create New Key</button>`}
        </div>
        <p class="status ${noticeFailed ? 'failed' : ''}" role="status">${notice}</p>
        ${created ? newKeyPanel(created) : null} ${creating ? createForm() : null}
        ${loadError ? html`<p class="error" role="alert">${loadError}</p>` : null}
        ${
          keys === undefined
            ? html`<p class="loading">Loading keys…</p>`
            : keys.length === 0
              ? html`<p class="muted">No keys yet. Create one to call the API.</p>`
              : html`<div class="table-wrap">
                  <table class="cards-on-mobile">
                    <caption class="visually-hidden">
                      Your API keys
                    </caption>
                    <thead>
                      <tr>
                        <th>Name</th>
                        <th>Key</th>
                        <th>Permissions</th>
                        <th>Limit</th>
                        <th>Restrictions</th>
                        <th>Last used</th>
                        <th>Today</th>
                        <th>This month</th>
                        <th>Status</th>
                        <th><span class="visually-hidden">Actions</span></th>
                      </tr>
                    </thead>
                    <tbody>
                      ${keys.map(keyRow)}
                    </tbody>
                  </table>
                </div>`
        }
        ${editDialog()}
        <dialog id="revoke-dialog" aria-labelledby="revoke-title" @close=${() => (revoking = undefined)}>
          <h2 id="revoke-title">Revoke key “${revoking?.name}”?</h2>
          <p>Requests with <code>${revoking?.hint}</code> will be refused immediately. This cannot be undone.</p>
          <div class="actions">
            <button type="button" class="danger" @click=${confirmRevoke}>Revoke key</button>
            <button
              type="button"
              class="secondary"
              @click=${() => container.querySelector<HTMLDialogElement>('#revoke-dialog')?.close()}
            >
              Cancel
            </button>
          </div>
        </dialog>
      `,
      container,
    );
  }

  draw();
  void load();
};

const PERMISSION_DESCRIPTIONS: Record<Permission, string> = {
  full: 'Full access',
  read_only: 'Read-only (models and balance)',
  project: 'Project (chosen models)',
  management: 'Management (creates and manages other keys; never calls models)',
};

/** The governance inputs of the create form (`new`) and the edit dialog (`edit`, filled with the key's values). */
function governanceFields(prefix: string, key?: ApiKey) {
  const id = (name: string) => `${prefix}-${name}`;
  return html`
    <label for=${id('limit')}>Spend limit (USD, optional)</label>
    <input
      id=${id('limit')}
      name="limit"
      type="number"
      min="0"
      step="any"
      inputmode="decimal"
      .value=${key?.limit == null ? '' : String(key.limit)}
    />
    <label for=${id('limit-reset')}>Limit resets</label>
    <select id=${id('limit-reset')} name="limit_reset">
      <option value="" ?selected=${!key?.limit_reset}>Never</option>
      ${Object.keys(RESETS).map(
        (reset) =>
          html`<option value=${reset} ?selected=${key?.limit_reset === reset}>
            ${reset[0]!.toUpperCase() + reset.slice(1)} (UTC)
          </option>`,
      )}
    </select>
    <label for=${id('expires')}>Expires (UTC, optional)</label>
    <input
      id=${id('expires')}
      name="expires_at"
      type="datetime-local"
      .value=${key?.expires_at ? key.expires_at.slice(0, 16) : ''}
    />
    <label for=${id('rpm')}>Requests per minute (optional, at most the account's)</label>
    <input
      id=${id('rpm')}
      name="requests_per_minute"
      type="number"
      min="1"
      step="1"
      .value=${key?.requests_per_minute == null ? '' : String(key.requests_per_minute)}
    />
    <label for=${id('tpm')}>Tokens per minute (optional, at most the account's)</label>
    <input
      id=${id('tpm')}
      name="tokens_per_minute"
      type="number"
      min="1"
      step="1"
      .value=${key?.tokens_per_minute == null ? '' : String(key.tokens_per_minute)}
    />
    <label for=${id('ips')}>Allowed IP addresses (optional; CIDRs or addresses, one per line)</label>
    <textarea
      id=${id('ips')}
      name="allowed_ips"
      rows="3"
      placeholder="203.0.113.0/24&#10;2001:db8::/32"
      .value=${key?.allowed_ips.join('\n') ?? ''}
    ></textarea>
  `;
}

/**
 * The governance fields of a submitted form. An empty field means none: left out on creation, cleared (null or an
 * empty list) on edit. The expiry is read as UTC, as the form says.
 */
function governance(form: FormData, editing: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const set = (name: string, value: unknown, empty: unknown) => {
    if (value !== undefined) body[name] = value;
    else if (editing) body[name] = empty;
  };
  const text = (name: string) => textField(form, name).trim() || undefined;
  const number = (name: string) => (text(name) === undefined ? undefined : Number(text(name)));
  set('limit', number('limit'), null);
  set('limit_reset', text('limit_reset'), null);
  const expires = text('expires_at');
  set('expires_at', expires === undefined ? undefined : `${expires.length === 16 ? `${expires}:00` : expires}Z`, null);
  set('requests_per_minute', number('requests_per_minute'), null);
  set('tokens_per_minute', number('tokens_per_minute'), null);
  const ips = text('allowed_ips')
    ?.split(/[\s,]+/)
    .filter(Boolean);
  set('allowed_ips', ips, []);
  return body;
}

function limitCell(key: ApiKey) {
  if (key.limit === null)
    return html`<span class="muted">No limit</span>
      <div class="muted small">${usd(key.usage)} spent</div>`;
  const period = key.limit_reset ? RESETS[key.limit_reset] : 'in total';
  return html`${usd(key.usage)} of ${usd(key.limit)} ${period}
    <div class="muted small">
      ${usd(key.limit_remaining ?? 0)} left${key.limit_resets_at ? ` · resets ${isoDate(key.limit_resets_at)}` : ''}
    </div>`;
}

function restrictionsCell(key: ApiKey) {
  const lines = [
    key.expires_at ? `Expires ${isoDate(key.expires_at)}` : undefined,
    key.requests_per_minute === null ? undefined : `${count(key.requests_per_minute)} requests/min`,
    key.tokens_per_minute === null ? undefined : `${count(key.tokens_per_minute)} tokens/min`,
    key.allowed_ips.length ? `IPs: ${key.allowed_ips.join(', ')}` : undefined,
  ].filter((line): line is string => line !== undefined);
  if (!lines.length) return html`<span class="muted">None</span>`;
  return html`${lines.map((line) => html`<div class="small">${line}</div>`)}`;
}

function statusBadge(key: ApiKey) {
  if (key.revoked) return html`<span class="badge off">Revoked</span>`;
  if (key.expires_at && Date.parse(key.expires_at) <= Date.now()) return html`<span class="badge off">Expired</span>`;
  return html`<span class="badge on">Active</span>`;
}

/** A key's requests and the credits they used (a test key's cost nothing). */
function usageCell(totals: UsageTotals | undefined) {
  if (!totals) return '-';
  return html`${totals.requests} ${totals.requests === 1 ? 'request' : 'requests'}
    <div class="muted small">${usd(totals.credits_used)}</div>`;
}
