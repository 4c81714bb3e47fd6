/**
 * A metered endpoint other than chat, POST /v1/embeddings, measured like chat: throughput at 50 connections in
 * slices taken in turn (rotated each round), then latency at one connection, for the mock hit directly, the
 * baseline proxy and tollgate.
 */
import { combineLoads, rotate, runLatency, runLoad, type Endpoint, type LoadResult, type Tool } from './load.js';
import type { ConfigResult, TargetName } from './report.js';

export interface EmbeddingsSettings {
  warmupS: number;
  throughputS: number;
  throughputSlices: number;
  latencyS: number;
  connections: number;
}

/** Eight short texts, as a RAG pipeline batches them. */
export function embeddingsBody(model: string): string {
  const input = Array.from({ length: 8 }, (_, i) => `Passage ${i + 1}: the quick brown fox jumps over the lazy dog.`);
  return JSON.stringify({ model, input, encoding_format: 'float' });
}

export async function measureEmbeddings(
  result: ConfigResult,
  settings: EmbeddingsSettings,
  tool: Tool,
  endpoints: Record<TargetName, Endpoint>,
  write: (text: string) => void,
): Promise<void> {
  const order: TargetName[] = ['direct', 'baseline', 'tollgate'];
  const noteErrors = (target: string, phase: string, load: LoadResult) => {
    if (load.errors > 0)
      result.failures.push(
        `${target} embeddings ${phase}: ${load.errors} failed (${JSON.stringify(load.errorDetail)})`,
      );
  };
  for (const target of order) {
    noteErrors(target, 'warm-up', await runLoad(tool, endpoints[target], settings.connections, settings.warmupS));
  }
  write(`   ${result.name}: embeddings throughput and latency...`);
  const loads = new Map<TargetName, LoadResult[]>(order.map((target) => [target, []]));
  for (let round = 0; round < settings.throughputSlices; round++) {
    for (const target of rotate(order, round)) {
      const slice = settings.throughputS / settings.throughputSlices;
      loads.get(target)!.push(await runLoad(tool, endpoints[target], settings.connections, slice));
    }
  }
  result.embeddings = [];
  for (const target of order) {
    const throughput = combineLoads(loads.get(target)!);
    noteErrors(target, 'throughput', throughput);
    const latency = await runLatency(tool, endpoints[target], settings.latencyS);
    noteErrors(target, 'latency', latency);
    result.embeddings.push({ name: target, rps: throughput.rps, p50Ms: latency.latencyMs.p50 });
  }
  write(' done\n');
}
