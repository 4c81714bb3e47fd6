/**
 * Live model figures measured from real traffic and health probes, per model over all its deployments:
 * per-minute buckets, the last hour for speed and the last 24 hours for uptime. Nothing is reported until a
 * model has served traffic.
 */
const MINUTE = 60_000;
const HOUR_BUCKETS = 60;
const DAY_BUCKETS = 24 * 60;

interface Bucket {
  minute: number;
  calls: number;
  failures: number;
  completed: number;
  seconds: number;
  tokens: number;
  generationSeconds: number;
}

export interface Observation {
  ok: boolean;
  /** Request to last byte. */
  durationMs: number;
  completionTokens: number;
  /** First to last token (the whole duration when not streamed). */
  generationMs: number;
}

export interface ModelFigures {
  avg_response_time: number | null;
  avg_tokens_per_second: number | null;
  uptime_percentage: number | null;
}

export class LiveFigures {
  private readonly models = new Map<string, Bucket[]>();

  record(modelId: string, observation: Observation, now = Date.now()): void {
    const bucket = this.bucket(modelId, Math.floor(now / MINUTE));
    bucket.calls++;
    if (!observation.ok) {
      bucket.failures++;
      return;
    }
    bucket.completed++;
    bucket.seconds += observation.durationMs / 1000;
    if (observation.completionTokens > 0 && observation.generationMs > 0) {
      bucket.tokens += observation.completionTokens;
      bucket.generationSeconds += observation.generationMs / 1000;
    }
  }

  /**
   * An upstream call that counts for uptime only: a health probe, or a failed attempt that routing retried or
   * fell back from (the request's own outcome is recorded by `record`).
   */
  recordUptime(modelId: string, ok: boolean, now = Date.now()): void {
    const bucket = this.bucket(modelId, Math.floor(now / MINUTE));
    bucket.calls++;
    if (!ok) bucket.failures++;
  }

  figures(modelId: string, now = Date.now()): ModelFigures {
    const minute = Math.floor(now / MINUTE);
    let calls = 0;
    let failures = 0;
    let completed = 0;
    let seconds = 0;
    let tokens = 0;
    let generationSeconds = 0;
    for (const b of this.models.get(modelId) ?? []) {
      if (b.minute <= minute - DAY_BUCKETS) continue;
      calls += b.calls;
      failures += b.failures;
      if (b.minute > minute - HOUR_BUCKETS) {
        completed += b.completed;
        seconds += b.seconds;
        tokens += b.tokens;
        generationSeconds += b.generationSeconds;
      }
    }
    return {
      avg_response_time: completed > 0 ? round(seconds / completed, 3) : null,
      avg_tokens_per_second: generationSeconds > 0 ? round(tokens / generationSeconds, 1) : null,
      uptime_percentage: calls > 0 ? round((100 * (calls - failures)) / calls, 2) : null,
    };
  }

  private bucket(modelId: string, minute: number): Bucket {
    let buckets = this.models.get(modelId);
    if (!buckets) {
      buckets = [];
      this.models.set(modelId, buckets);
    }
    let last = buckets[buckets.length - 1];
    if (!last || last.minute !== minute) {
      last = { minute, calls: 0, failures: 0, completed: 0, seconds: 0, tokens: 0, generationSeconds: 0 };
      buckets.push(last);
      while (buckets.length > 0 && buckets[0]!.minute <= minute - DAY_BUCKETS) buckets.shift();
    }
    return last;
  }
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
