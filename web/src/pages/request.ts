/**
 * One request's charge explained (`/dashboard/requests/<id>`, from a ledger row or an id of a CSV row): where it
 * went and how it ended, its tokens by kind, and what each kind cost at which price.
 */
import { html, render } from 'lit-html';
import { api, type BreakdownLine, type Generation } from '../api.js';
import type { Page } from '../app.js';
import { count, dateTime, exactUsd, milliseconds, nanoUsd, orDash, price, usd } from '../format.js';

const KIND_LABELS: Record<string, string> = {
  input: 'Input',
  cached_input: 'Cached input',
  cache_write: 'Cache write',
  cache_write_1h: 'Cache write (1 hour)',
  output: 'Output',
  reasoning: 'Reasoning',
  request: 'Request fee',
  images: 'Images',
  web_searches: 'Web searches',
};
const TOKEN_LABELS: Record<string, string> = { prompt: 'Prompt', completion: 'Completion', ...KIND_LABELS };

const yesNo = (value: boolean | null) => (value === null ? '–' : value ? 'Yes' : 'No');
const text = (value: string | null) => value ?? '–';

export function requestPage(id: string): Page {
  return (container) => {
    let generation: Generation | undefined;
    let error = '';

    async function load() {
      try {
        generation = await api<Generation>('GET', `/generation?id=${encodeURIComponent(id)}`);
      } catch (caught) {
        error = (caught as Error).message;
      }
      draw();
    }

    const fact = (label: string, value: unknown) =>
      html`<div>
        <dt>${label}</dt>
        <dd>${value}</dd>
      </div>`;

    function summary(g: Generation) {
      return html`<section class="card" aria-labelledby="summary-heading">
        <h2 id="summary-heading">Summary</h2>
        <dl class="facts" id="request-summary">
          ${fact('Model', text(g.model))} ${fact('Provider', text(g.provider))}
          ${fact('Endpoint', html`<code>${text(g.endpoint)}</code>`)} ${fact('API key', g.key.name ?? g.key.id ?? '–')}
          ${fact('When', dateTime(g.created))} ${fact('Streamed', yesNo(g.streamed))}
          ${fact('Cancelled', yesNo(g.cancelled))} ${fact('Finish reason', text(g.finish_reason))}
          ${fact('Latency', orDash(g.latency_ms, milliseconds))}
          ${fact('Time to first token', orDash(g.time_to_first_token_ms, milliseconds))}
          ${fact('Charged', nanoUsd(g.cost_nano))} ${fact('Balance after', usd(g.ledger_entry.balance_after))}
        </dl>
        <h3>Identifiers</h3>
        <dl class="ids">
          ${fact('Request id', html`<code>${text(g.id)}</code>`)}
          ${fact('Answer id', html`<code>${text(g.answer_id)}</code>`)}
          ${fact('Ledger entry', html`<code>${g.ledger_entry.id}</code>`)}
        </dl>
      </section>`;
    }

    function tokens(g: Generation) {
      // Prompt and completion always; the finer kinds when there were any.
      const kinds = Object.entries(g.tokens).filter(
        ([kind, n]) => kind in TOKEN_LABELS && (kind === 'prompt' || kind === 'completion' || Boolean(n)),
      );
      return html`<section class="card" aria-labelledby="tokens-heading">
        <h2 id="tokens-heading">Tokens</h2>
        <dl class="facts">
          ${kinds.map(([kind, n]) => fact(TOKEN_LABELS[kind]!, count(n ?? 0)))}
          ${fact('Total', count(g.tokens.total ?? 0))}
        </dl>
      </section>`;
    }

    const priceOf = (line: BreakdownLine) =>
      line.price_per_million !== undefined
        ? `${price(line.price_per_million)} per 1M tokens`
        : `${price(line.price ?? 0)} per ${line.unit === 'request' ? 'request' : 'unit'}`;

    function breakdown(g: Generation) {
      const b = g.breakdown;
      if (!b)
        return html`<section class="card" aria-labelledby="breakdown-heading">
          <h2 id="breakdown-heading">Breakdown</h2>
          <p class="muted">This request was charged before prices were kept per request: ${nanoUsd(g.cost_nano)}.</p>
        </section>`;
      const capped = BigInt(b.charged_nano) < BigInt(b.priced_nano);
      const terms = [
        b.tier_above_prompt_tokens === null ? '' : `the tier above ${count(b.tier_above_prompt_tokens)} prompt tokens`,
        b.service_tier ? `service tier ${b.service_tier}` : '',
      ].filter(Boolean);
      return html`<section class="card" aria-labelledby="breakdown-heading">
        <h2 id="breakdown-heading">Breakdown</h2>
        <p class="help">
          The usage the provider reported, at the prices in force when the request was
          admitted${terms.length ? ` (${terms.join(', ')})` : ''}.
        </p>
        <div class="table-wrap">
          <table id="breakdown" class="cards-on-mobile">
            <caption class="visually-hidden">
              Cost per kind of usage
            </caption>
            <thead>
              <tr>
                <th>Kind</th>
                <th class="num">Quantity</th>
                <th class="num">Price</th>
                <th class="num">Cost</th>
              </tr>
            </thead>
            <tbody>
              ${b.lines.map(
                (line) =>
                  html`<tr>
                    <td data-label="Kind">${KIND_LABELS[line.kind] ?? line.kind}</td>
                    <td data-label="Quantity" class="num">${count(line.quantity)}</td>
                    <td data-label="Price" class="num">${priceOf(line)}</td>
                    <td data-label="Cost" class="num">${exactUsd(line.cost)}</td>
                  </tr>`,
              )}
            </tbody>
            <tfoot>
              <tr>
                <th scope="row" colspan="3">Priced (rounded up to the nano-dollar)</th>
                <td data-label="Priced" class="num" data-testid="priced">${nanoUsd(b.priced_nano)}</td>
              </tr>
              <tr>
                <th scope="row" colspan="3">Charged</th>
                <td data-label="Charged" class="num" data-testid="charged">${nanoUsd(b.charged_nano)}</td>
              </tr>
            </tfoot>
          </table>
        </div>
        ${capped ? html`<p class="muted small">Less than priced: the hold or a spending limit capped the charge.</p>` : null}
      </section>`;
    }

    function draw() {
      render(
        html`
          <div class="page-head">
            <h1>Request</h1>
            <a href="/dashboard/credits">Back to Credits &amp; usage</a>
          </div>
          ${error ? html`<p class="error" role="alert">${error}</p>` : null}
          ${
            generation
              ? html`${summary(generation)} ${tokens(generation)} ${breakdown(generation)}`
              : error
                ? null
                : html`<p class="loading">Loading…</p>`
          }
        `,
        container,
      );
    }

    draw();
    void load();
  };
}
