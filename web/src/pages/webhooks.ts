/** Webhooks: endpoints (add, send a test, delete), recent deliveries, and dead letters with replay. */
import { html, render } from 'lit-html';
import { ApiError, api, type Delivery, type List, type Webhook } from '../api.js';
import type { Page } from '../app.js';
import { dateTime } from '../format.js';
import { textField } from '../forms.js';

const EVENTS: Array<[string, string]> = [
  ['credit.low_balance', 'Low balance'],
  ['llm.completion', 'Completion'],
  ['llm.error', 'Error'],
  ['llm.streaming.start', 'Stream start'],
  ['llm.streaming.end', 'Stream end'],
  ['llm.streaming.chunk', 'Stream chunk (one per chunk)'],
];

/** A signing secret made in the browser: 32 random bytes, base64url. */
function newSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')}`;
}

const STATUS_BADGE: Record<Delivery['status'], string> = {
  succeeded: 'on',
  dead: 'off',
  failed: 'off',
  pending: '',
  delivering: '',
};

export const webhooksPage: Page = (container) => {
  let endpoints: Webhook[] | undefined;
  let deliveries: Delivery[] = [];
  let dead: Delivery[] = [];
  let loadError = '';
  let adding = false;
  let formError = '';
  let created: Webhook | undefined;
  let copied = false;
  let deleting: Webhook | undefined;
  let notice = '';
  /** Whether the notice reports a failure (shown as an error, not a confirmation). */
  let failed = false;

  async function load() {
    try {
      const [list, recent, letters] = await Promise.all([
        api<List<Webhook>>('GET', '/webhooks'),
        api<List<Delivery>>('GET', '/webhooks/deliveries?limit=20'),
        api<List<Delivery>>('GET', '/webhooks/dead-letters?limit=50'),
      ]);
      [endpoints, deliveries, dead] = [list.data, recent.data, letters.data];
      loadError = '';
    } catch (error) {
      loadError = (error as Error).message;
    }
    draw();
  }

  const endpointUrl = (id: string) => endpoints?.find((w) => w.id === id)?.url ?? id;

  async function add(event: SubmitEvent) {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const types = form.getAll('events').map(String);
    if (types.length === 0) {
      formError = 'Choose at least one event.';
      return draw();
    }
    const description = textField(form, 'description').trim();
    try {
      created = await api<Webhook>('POST', '/webhooks', {
        url: textField(form, 'url').trim(),
        secret: newSecret(),
        events: types.map((type) => ({ type })),
        retryConfig: { maxAttempts: Number(form.get('attempts') || 3) },
        ...(description ? { description } : {}),
      });
      copied = false;
      adding = false;
      notice = `Endpoint ${created.url} added.`;
      failed = false;
      await load();
      container.querySelector<HTMLElement>('#secret-heading')?.focus();
    } catch (error) {
      formError = error instanceof ApiError ? error.message : 'The endpoint could not be added.';
      draw();
    }
  }

  async function copySecret() {
    const input = container.querySelector<HTMLInputElement>('#webhook-secret')!;
    try {
      await navigator.clipboard.writeText(input.value);
    } catch {
      input.select();
    }
    copied = true;
    draw();
  }

  async function sendTest(webhook: Webhook) {
    notice = `Sending a test event to ${webhook.url}…`;
    failed = false;
    draw();
    try {
      const result = await api<{ success: boolean; status: number | null; error: string | null }>(
        'POST',
        `/webhooks/${encodeURIComponent(webhook.id)}/test`,
      );
      failed = !result.success;
      notice = result.success
        ? `Test event delivered to ${webhook.url} (HTTP ${result.status}).`
        : `Test event to ${webhook.url} failed: ${result.error ?? `HTTP ${result.status}`}.`;
    } catch (error) {
      failed = true;
      notice = `The test event could not be sent: ${(error as Error).message}`;
    }
    await load();
  }

  async function confirmDelete() {
    const webhook = deleting!;
    container.querySelector<HTMLDialogElement>('#delete-dialog')?.close();
    deleting = undefined;
    try {
      await api('DELETE', `/webhooks/${encodeURIComponent(webhook.id)}`);
      notice = `Endpoint ${webhook.url} deleted.`;
      failed = false;
    } catch (error) {
      notice = `The endpoint could not be deleted: ${(error as Error).message}`;
      failed = true;
    }
    await load();
  }

  async function replay(delivery: Delivery) {
    try {
      await api('POST', `/webhooks/dead-letters/${encodeURIComponent(delivery.id)}/replay`);
      notice = `Event ${delivery.event} queued again for ${endpointUrl(delivery.webhook_id)}.`;
      failed = false;
    } catch (error) {
      notice = `The event could not be replayed: ${(error as Error).message}`;
      failed = true;
    }
    await load();
  }

  const secretPanel = (webhook: Webhook) => html`
    <section class="card new-key" aria-labelledby="secret-heading">
      <h2 id="secret-heading" tabindex="-1">Endpoint added</h2>
      <p><code class="url">${webhook.url}</code> signs every delivery with this secret.</p>
      <p class="warning" role="note">
        <strong>Copy this secret now.</strong> It is shown only once and cannot be shown again. Your receiver checks
        each delivery's signature with it (<code>verifyWebhook</code> of <code>tollgate/webhooks</code>).
      </p>
      <div class="copy-row">
        <label class="visually-hidden" for="webhook-secret">Signing secret</label>
        <input
          id="webhook-secret"
          class="mono"
          readonly
          .value=${webhook.secret ?? ''}
          @focus=${(e: Event) => (e.target as HTMLInputElement).select()}
        />
        <button type="button" @click=${copySecret}>${copied ? 'Copied' : 'Copy'}</button>
      </div>
      <button type="button" class="secondary" @click=${() => ((created = undefined), draw())}>
        I have stored the secret
      </button>
    </section>
  `;

  const addForm = () => html`
    <section class="card" aria-labelledby="add-heading">
      <h2 id="add-heading">Add endpoint</h2>
      <form @submit=${add} class="grid-form" novalidate>
        <label for="webhook-url">Endpoint URL</label>
        <input id="webhook-url" name="url" type="url" required placeholder="https://example.com/hooks/tollgate" />
        <fieldset>
          <legend>Events</legend>
          <div class="checklist">
            ${EVENTS.map(
              ([type, label]) =>
                html`<label class="inline"
                  ><input type="checkbox" name="events" value=${type} ?checked=${type === 'credit.low_balance'} />
                  ${label} <code class="small">${type}</code></label
                >`,
            )}
          </div>
        </fieldset>
        <label for="webhook-attempts">Delivery attempts before a dead letter</label>
        <input id="webhook-attempts" name="attempts" type="number" min="1" max="10" step="1" value="3" />
        <label for="webhook-description">Description (optional)</label>
        <input id="webhook-description" name="description" maxlength="500" />
        ${formError ? html`<p class="error" role="alert">${formError}</p>` : null}
        <div class="actions">
          <button type="submit">Add endpoint</button>
          <button type="button" class="secondary" @click=${() => ((adding = false), draw())}>Cancel</button>
        </div>
      </form>
    </section>
  `;

  const endpointRow = (w: Webhook) => html`
    <tr>
      <td data-label="URL">
        <div>
          <code class="url">${w.url}</code
          >${w.description ? html`<div class="muted small">${w.description}</div>` : null}
        </div>
      </td>
      <td data-label="Events">
        <ul class="chips">
          ${w.events.map((e) => html`<li>${e.type}</li>`)}
        </ul>
      </td>
      <td data-label="Attempts" class="num">${w.retryConfig.maxAttempts}</td>
      <td data-label="Created">${dateTime(w.created)}</td>
      <td data-label="">
        <div class="actions tight">
          <button type="button" class="secondary small" @click=${() => sendTest(w)}>
            Send test<span class="visually-hidden"> to ${w.url}</span>
          </button>
          <button
            type="button"
            class="danger small"
            @click=${() => ((deleting = w), draw(), container.querySelector<HTMLDialogElement>('#delete-dialog')?.showModal())}
          >
            Delete<span class="visually-hidden"> ${w.url}</span>
          </button>
        </div>
      </td>
    </tr>
  `;

  /** The error says it all when there is one (it starts with the HTTP status); else the status alone. */
  const result = (d: Delivery) => d.last_error ?? (d.last_status === null ? '' : `HTTP ${d.last_status}`);

  const deliveryRow = (d: Delivery) => html`
    <tr>
      <td data-label="Time">${dateTime(d.created)}</td>
      <td data-label="Endpoint"><code class="url">${endpointUrl(d.webhook_id)}</code></td>
      <td data-label="Event"><code>${d.event}</code></td>
      <td data-label="Status"><span class="badge ${STATUS_BADGE[d.status]}">${d.status}</span></td>
      <td data-label="Attempts" class="num">${d.attempts}</td>
      <td data-label="Result" class="small">${result(d)}</td>
    </tr>
  `;

  const deadRow = (d: Delivery) => html`
    <tr>
      <td data-label="Time">${dateTime(d.created)}</td>
      <td data-label="Endpoint"><code class="url">${endpointUrl(d.webhook_id)}</code></td>
      <td data-label="Event"><code>${d.event}</code></td>
      <td data-label="Attempts" class="num">${d.attempts}</td>
      <td data-label="Last error" class="small">${result(d)}</td>
      <td data-label="">
        <button type="button" class="small" @click=${() => replay(d)}>
          Replay<span class="visually-hidden"> ${d.event} ${d.id}</span>
        </button>
      </td>
    </tr>
  `;

  function draw() {
    render(
      html`
        <div class="page-head">
          <h1>Webhooks</h1>
          <div class="actions tight">
            <button type="button" class="secondary" @click=${() => void load()}>Refresh</button>
            ${adding ? null : html`<button type="button" @click=${() => ((adding = true), (formError = ''), draw(), container.querySelector<HTMLInputElement>('#webhook-url')?.focus())}>Add endpoint</button>`}
          </div>
        </div>
        <p class="status ${failed ? 'failed' : ''}" role="status">${notice}</p>
        ${created ? secretPanel(created) : null} ${adding ? addForm() : null}
        ${loadError ? html`<p class="error" role="alert">${loadError}</p>` : null}
        ${
          endpoints === undefined
            ? html`<p class="loading">Loading webhooks…</p>`
            : html`
                <section class="card" aria-labelledby="endpoints-heading">
                  <h2 id="endpoints-heading">Endpoints</h2>
                  ${
                    endpoints.length === 0
                      ? html`<p class="muted">
                          No endpoints yet. Add one to receive low-balance alerts and request events.
                        </p>`
                      : html`<div class="table-wrap">
                          <table id="endpoints" class="cards-on-mobile">
                            <caption class="visually-hidden">
                              Webhook endpoints
                            </caption>
                            <thead>
                              <tr>
                                <th>URL</th>
                                <th>Events</th>
                                <th class="num">Attempts</th>
                                <th>Created</th>
                                <th><span class="visually-hidden">Actions</span></th>
                              </tr>
                            </thead>
                            <tbody>
                              ${endpoints.map(endpointRow)}
                            </tbody>
                          </table>
                        </div>`
                  }
                </section>
                <section class="card" aria-labelledby="deliveries-heading">
                  <h2 id="deliveries-heading">Recent deliveries</h2>
                  ${
                    deliveries.length === 0
                      ? html`<p class="muted">No deliveries yet.</p>`
                      : html`<div class="table-wrap">
                          <table id="deliveries" class="cards-on-mobile">
                            <caption class="visually-hidden">
                              Recent webhook deliveries, newest first
                            </caption>
                            <thead>
                              <tr>
                                <th>Time</th>
                                <th>Endpoint</th>
                                <th>Event</th>
                                <th>Status</th>
                                <th class="num">Attempts</th>
                                <th>Result</th>
                              </tr>
                            </thead>
                            <tbody>
                              ${deliveries.map(deliveryRow)}
                            </tbody>
                          </table>
                        </div>`
                  }
                </section>
                <section class="card" aria-labelledby="dead-heading">
                  <h2 id="dead-heading">Dead letters</h2>
                  <p class="help">
                    Deliveries that failed every attempt. Replay sends the event again with a fresh set of attempts.
                  </p>
                  ${
                    dead.length === 0
                      ? html`<p class="muted">No dead letters.</p>`
                      : html`<div class="table-wrap">
                          <table id="dead-letters" class="cards-on-mobile">
                            <caption class="visually-hidden">
                              Dead letters, newest first
                            </caption>
                            <thead>
                              <tr>
                                <th>Time</th>
                                <th>Endpoint</th>
                                <th>Event</th>
                                <th class="num">Attempts</th>
                                <th>Last error</th>
                                <th><span class="visually-hidden">Actions</span></th>
                              </tr>
                            </thead>
                            <tbody>
                              ${dead.map(deadRow)}
                            </tbody>
                          </table>
                        </div>`
                  }
                </section>
              `
        }
        <dialog id="delete-dialog" aria-labelledby="delete-title" @close=${() => (deleting = undefined)}>
          <h2 id="delete-title">Delete this endpoint?</h2>
          <p>
            <code class="url">${deleting?.url}</code> will receive no more events. Its deliveries and dead letters go
            with it.
          </p>
          <div class="actions">
            <button type="button" class="danger" @click=${confirmDelete}>Delete endpoint</button>
            <button
              type="button"
              class="secondary"
              @click=${() => container.querySelector<HTMLDialogElement>('#delete-dialog')?.close()}
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
