/** The hot path's counters are plain numbers until read: every scrape must show exact, cumulative totals. */
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/observability/index.js';

function value(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? NaN : Number(line.slice(series.length + 1));
}

describe('metrics', () => {
  it('count requests, tokens and credits exactly across scrapes, never twice', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    for (let i = 0; i < 3; i++) {
      metrics.recordRequest('/v1/chat/completions', 200, 0.01);
      metrics.recordChat('openai', 'gpt-x', true, 0.01, { prompt: 10, completion: 5, usd: 0.25 });
    }
    metrics.recordRequest('/v1/chat/completions', 429, 0.001);
    let text = await metrics.registry.metrics();
    expect(value(text, 'tollgate_requests_total{route="/v1/chat/completions",status="200"}')).toBe(3);
    expect(value(text, 'tollgate_requests_total{route="/v1/chat/completions",status="429"}')).toBe(1);
    expect(value(text, 'tollgate_tokens_total{model="gpt-x",kind="prompt"}')).toBe(30);
    expect(value(text, 'tollgate_tokens_total{model="gpt-x",kind="completion"}')).toBe(15);
    expect(value(text, 'tollgate_credits_debited_usd_total{model="gpt-x"}')).toBe(0.75);

    text = await metrics.registry.metrics();
    expect(value(text, 'tollgate_tokens_total{model="gpt-x",kind="prompt"}')).toBe(30);

    metrics.recordChat('openai', 'gpt-x', true, 0.01, { prompt: 1, completion: 2, usd: 0.5 });
    metrics.recordChat('openai', 'gpt-x', false, 0.01);
    text = await metrics.registry.metrics();
    expect(value(text, 'tollgate_tokens_total{model="gpt-x",kind="prompt"}')).toBe(31);
    expect(value(text, 'tollgate_tokens_total{model="gpt-x",kind="completion"}')).toBe(17);
    expect(value(text, 'tollgate_credits_debited_usd_total{model="gpt-x"}')).toBe(1.25);
    expect(value(text, 'tollgate_requests_total{route="/v1/chat/completions",status="200"}')).toBe(3);
  });

  it('reads open reservations from their source at every scrape', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    let open = 3;
    metrics.countReservations(() => open);
    expect(value(await metrics.registry.metrics(), 'tollgate_reservations_open')).toBe(3);
    open = 0;
    expect(value(await metrics.registry.metrics(), 'tollgate_reservations_open')).toBe(0);
  });
});
