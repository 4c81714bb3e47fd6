/** API Keys: the list, Create New Key, the new key shown once, and Revoke with confirmation. */
import { html, render } from 'lit-html';
import { ApiError, api, type ApiKey, type List, type Model, type UsageTotals } from '../api.js';
import type { Page } from '../app.js';
import { PERMISSION_LABELS, date, dateTime, usd } from '../format.js';
import { textField } from '../forms.js';

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
  let notice = '';
  let noticeFailed = false;
  const first = app.takeFirstKey();
  if (first) created = { key: first, first: true };

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
    permission = 'full';
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
    };
    if (body.permissions === 'project') {
      body.models = form.getAll('models').map(String);
      const limit = textField(form, 'spend_limit').trim();
      if (limit) body.spend_limit = Number(limit);
    }
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
        <input id="key-name" name="name" maxlength="100" placeholder="e.g. production backend" />
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
          <option value="full">Full access</option>
          <option value="read_only">Read-only (models and balance)</option>
          <option value="project">Project (chosen models, own spend limit)</option>
        </select>
        ${
          permission === 'project'
            ? html`<fieldset>
                  <legend>Allowed models <span class="muted">(none selected = all)</span></legend>
                  <div class="checklist">
                    ${models.map((m) => html`<label class="inline"><input type="checkbox" name="models" value=${m.id} /> ${m.id}</label>`)}
                  </div>
                </fieldset>
                <label for="key-spend-limit">Spend limit (USD, optional)</label>
                <input id="key-spend-limit" name="spend_limit" type="number" min="0" step="0.01" inputmode="decimal" />`
            : null
        }
        ${formError ? html`<p class="error" role="alert">${formError}</p>` : null}
        <div class="actions">
          <button type="submit">Create key</button>
          <button type="button" class="secondary" @click=${() => ((creating = false), draw())}>Cancel</button>
        </div>
      </form>
    </section>
  `;

  const keyRow = (key: ApiKey) => html`
    <tr class=${key.revoked ? 'revoked' : ''}>
      <td data-label="Name">${key.name}</td>
      <td data-label="Key"><code>${key.hint}</code></td>
      <td data-label="Environment"><span class="badge ${key.environment}">${key.environment}</span></td>
      <td data-label="Permissions">
        <div>
          ${PERMISSION_LABELS[key.permissions]}
          ${
            key.permissions === 'project'
              ? html`<div class="muted small">
                  ${key.models.length ? key.models.join(', ') : 'all models'}${key.spend_limit !== null ? html` · limit ${usd(key.spend_limit)}` : null}
                </div>`
              : null
          }
        </div>
      </td>
      <td data-label="Created">${date(key.created)}</td>
      <td data-label="Last used">${dateTime(key.last_used)}</td>
      <td data-label="Today">${usageCell(key.usage?.daily)}</td>
      <td data-label="This month">${usageCell(key.usage?.monthly)}</td>
      <td data-label="Status">
        <span class="badge ${key.revoked ? 'off' : 'on'}">${key.revoked ? 'Revoked' : 'Active'}</span>
      </td>
      <td data-label="">
        ${key.revoked ? null : html`<button type="button" class="danger small" @click=${() => askRevoke(key)}>Revoke<span class="visually-hidden"> ${key.name}</span></button>`}
      </td>
    </tr>
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
                        <th>Environment</th>
                        <th>Permissions</th>
                        <th>Created</th>
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

/** A key's requests and the credits they used (a test key's cost nothing). */
function usageCell(totals: UsageTotals | undefined) {
  if (!totals) return '-';
  return html`${totals.requests} ${totals.requests === 1 ? 'request' : 'requests'}
    <div class="muted small">${usd(totals.credits_used)}</div>`;
}
