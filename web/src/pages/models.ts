/** The model catalog with pricing, capabilities, context length, live performance and status. */
import { html, render } from 'lit-html';
import { api, type List, type Model, type Pricing } from '../api.js';
import type { Page } from '../app.js';
import { count, orDash, price } from '../format.js';

/** Each priced kind besides prompt and completion, as the table names it. */
const KINDS: Array<[keyof Pricing, string]> = [
  ['input_cache_read', 'cache read'],
  ['input_cache_write', 'cache write'],
  ['input_cache_write_1h', 'cache write 1h'],
  ['internal_reasoning', 'reasoning'],
  ['request', 'per request'],
  ['image', 'per image'],
  ['web_search', 'per web search'],
];

const kinds = (p: Pricing): string =>
  [
    ...(p.prompt !== undefined ? [`in ${price(p.prompt)}`] : []),
    ...(p.completion !== undefined ? [`out ${price(p.completion)}`] : []),
    ...KINDS.filter(([kind]) => p[kind] !== undefined).map(([kind, name]) => `${name} ${price(p[kind]!)}`),
  ].join(', ');

/** Every price besides prompt and completion: cache, reasoning, fees, tiers, service tiers, dated and daily changes. */
function otherPrices(m: Model): string[] {
  const { pricing } = m;
  const base = KINDS.filter(([kind]) => pricing[kind] !== undefined).map(
    ([kind, name]) => `${name} ${price(pricing[kind]!)}`,
  );
  return [
    ...(base.length ? [base.join(', ')] : []),
    ...(pricing.tiers ?? []).map((t) => `prompt above ${count(t.above_prompt_tokens)}: ${kinds(t)}`),
    ...Object.entries(pricing.service_tiers ?? {}).map(([name, t]) => `${name} tier: ${kinds(t)}`),
    ...(pricing.changes ?? []).map((c) => `from ${c.effective_from}: ${kinds(c)}`),
    ...(pricing.daily ?? []).map((d) => `${d.from_utc}–${d.to_utc} UTC: ${kinds(d)}`),
  ];
}

const CAPABILITIES = ['chat', 'completion', 'function_calling', 'vision', 'embeddings', 'json_mode'];
const CAPABILITY_FILTERS: Array<[string, string]> = [
  ['', 'Any capability'],
  ['chat', 'Chat'],
  ['completion', 'Completion'],
  ['function_calling', 'Function calling'],
  ['image', 'Image input (vision)'],
  ['json_mode', 'JSON mode'],
  ['embedding', 'Embeddings'],
];

export const modelsPage: Page = (container) => {
  let models: Model[] | undefined;
  let providers: Array<{ id: string; name: string }> = [];
  const filter = { provider: '', capability: '', active_only: true };
  let error = '';

  async function load() {
    const query = new URLSearchParams({ active_only: String(filter.active_only) });
    if (filter.provider) query.set('provider', filter.provider);
    if (filter.capability) query.set('capability', filter.capability);
    try {
      models = (await api<List<Model>>('GET', `/models?${query}`)).data;
      error = '';
    } catch (caught) {
      error = (caught as Error).message;
    }
    draw();
  }

  async function loadProviders() {
    const all = (await api<List<Model>>('GET', '/models?active_only=false')).data;
    const seen = new Map(all.map((m) => [m.provider.id, m.provider]));
    providers = [...seen.values()];
    draw();
  }

  const change = (name: 'provider' | 'capability') => (e: Event) => {
    filter[name] = (e.target as HTMLSelectElement).value;
    void load();
  };

  const row = (m: Model) => html`
    <tr>
      <td data-label="Model">
        <div>
          <strong>${m.id}</strong>
          <div class="muted small">${m.provider.name}${m.aliases?.length ? ` · also ${m.aliases.join(', ')}` : ''}</div>
        </div>
      </td>
      <td data-label="Prompt / 1K" class="num">${price(m.pricing.prompt ?? 0)}</td>
      <td data-label="Completion / 1K" class="num">${price(m.pricing.completion ?? 0)}</td>
      <td data-label="Other prices / 1K" class="small">${otherPrices(m).map((line) => html`<div>${line}</div>`)}</td>
      <td data-label="Context" class="num">${count(m.context_length)}</td>
      <td data-label="Max output" class="num">${count(m.max_tokens)}</td>
      <td data-label="Capabilities">
        <ul class="chips">
          ${CAPABILITIES.filter((c) => m.capabilities[c]).map((c) => html`<li>${c.replace('_', ' ')}</li>`)}
        </ul>
      </td>
      <td data-label="Avg response" class="num">
        ${orDash(m.performance.avg_response_time, (v) => `${v.toFixed(2)} s`)}
      </td>
      <td data-label="Tokens/s" class="num">${orDash(m.performance.avg_tokens_per_second, (v) => v.toFixed(1))}</td>
      <td data-label="Uptime" class="num">${orDash(m.performance.uptime_percentage, (v) => `${v.toFixed(1)}%`)}</td>
      <td data-label="Status">
        <div>
          <span class="badge ${m.status.active ? 'on' : 'off'}">${m.status.active ? 'Active' : 'Unavailable'}</span>
          <div class="muted small">${m.status.message}</div>
        </div>
      </td>
    </tr>
  `;

  function draw() {
    render(
      html`
        <div class="page-head"><h1>Models</h1></div>
        <form class="filters" @submit=${(e: Event) => e.preventDefault()} aria-label="Filter models">
          <label
            >Provider
            <select name="provider" @change=${change('provider')}>
              <option value="">All providers</option>
              ${providers.map((p) => html`<option value=${p.id} ?selected=${filter.provider === p.id}>${p.name}</option>`)}
            </select>
          </label>
          <label
            >Capability
            <select name="capability" @change=${change('capability')}>
              ${CAPABILITY_FILTERS.map(([value, label]) => html`<option value=${value} ?selected=${filter.capability === value}>${label}</option>`)}
            </select>
          </label>
          <label class="inline"
            ><input
              type="checkbox"
              name="active_only"
              ?checked=${filter.active_only}
              @change=${(e: Event) => ((filter.active_only = (e.target as HTMLInputElement).checked), void load())}
            />
            Active models only</label
          >
        </form>
        <p class="help">
          Prices are USD per 1,000 tokens (fees per request, image or search); a prompt above a tier's size pays the
          tier's prices on every token. Performance is measured live: response time and speed over the last hour, uptime
          over the last 24 hours.
        </p>
        ${error ? html`<p class="error" role="alert">${error}</p>` : null}
        ${
          models === undefined
            ? html`<p class="loading">Loading models…</p>`
            : models.length === 0
              ? html`<p class="muted">No model matches these filters.</p>`
              : html`<div class="table-wrap">
                  <table id="models" class="cards-on-mobile">
                    <caption class="visually-hidden">
                      Models
                    </caption>
                    <thead>
                      <tr>
                        <th>Model</th>
                        <th class="num">Prompt / 1K</th>
                        <th class="num">Completion / 1K</th>
                        <th>Other prices / 1K</th>
                        <th class="num">Context</th>
                        <th class="num">Max output</th>
                        <th>Capabilities</th>
                        <th class="num">Avg response</th>
                        <th class="num">Tokens/s</th>
                        <th class="num">Uptime</th>
                        <th>Status</th>
                      </tr>
                    </thead>
                    <tbody>
                      ${models.map(row)}
                    </tbody>
                  </table>
                </div>`
        }
      `,
      container,
    );
  }

  draw();
  void load();
  void loadProviders().catch(() => undefined);
};
