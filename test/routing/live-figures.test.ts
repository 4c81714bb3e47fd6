/** The live figures of GET /v1/models (CONTRACT "Model catalog"): their units and rolling windows. */
import { describe, expect, it } from 'vitest';
import { LiveFigures } from '../../src/catalog/index.js';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

describe('LiveFigures', () => {
  it('is all null until measured', () => {
    expect(new LiveFigures().figures('m', T0)).toEqual({
      avg_response_time: null,
      avg_tokens_per_second: null,
      uptime_percentage: null,
    });
  });

  it('avg_response_time is the mean seconds to the last byte of successful calls, over the last hour', () => {
    const tracker = new LiveFigures();
    tracker.record('m', { ok: true, durationMs: 9_000, completionTokens: 90, generationMs: 9_000 }, T0 - 61 * MINUTE); // outside the hour
    tracker.record('m', { ok: true, durationMs: 1_000, completionTokens: 50, generationMs: 500 }, T0 - 30 * MINUTE);
    tracker.record('m', { ok: true, durationMs: 2_000, completionTokens: 150, generationMs: 1_500 }, T0);
    tracker.record('m', { ok: false, durationMs: 30_000, completionTokens: 0, generationMs: 0 }, T0); // failures have no response time
    const figures = tracker.figures('m', T0);
    expect(figures.avg_response_time).toBe(1.5);
    // Completion tokens per second of generation: (50 + 150) / (0.5 + 1.5).
    expect(figures.avg_tokens_per_second).toBe(100);
    // Uptime spans 24 hours, the hour-old call included: 3 of 4 calls succeeded.
    expect(figures.uptime_percentage).toBe(75);
    expect(tracker.figures('other', T0).uptime_percentage).toBeNull();
  });

  it('uptime counts health probes and failed attempts over the last 24 hours only', () => {
    const tracker = new LiveFigures();
    tracker.recordUptime('m', false, T0 - 25 * 60 * MINUTE); // a day and an hour ago: forgotten
    tracker.record('m', { ok: true, durationMs: 100, completionTokens: 1, generationMs: 100 }, T0 - 23 * 60 * MINUTE);
    tracker.recordUptime('m', false, T0 - 10 * MINUTE); // a failed attempt that fell back
    tracker.recordUptime('m', true, T0 - 5 * MINUTE); // a probe that succeeded
    tracker.recordUptime('m', false, T0); // a probe that failed
    const figures = tracker.figures('m', T0);
    expect(figures.uptime_percentage).toBe(50);
    // Nothing in the last hour succeeded with a measured time.
    expect(figures.avg_response_time).toBeNull();
    expect(tracker.figures('m', T0 + 24 * 60 * MINUTE).uptime_percentage).toBeNull();
  });
});
