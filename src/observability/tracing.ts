/**
 * OpenTelemetry traces, exported by OTLP over HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. Without it nothing is loaded and `withSpan` is a plain call, so the
 * hot path pays one boolean test. With it: a server span per HTTP request (continuing an incoming `traceparent`),
 * child spans for upstream calls, credit and rate-limit work in Redis and the database commit, and `traceparent`
 * on upstream requests. The SDK reads the usual OTEL_* variables (service name, headers, sampler).
 */
import {
  context,
  propagation,
  trace,
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { messageOf } from '../errors/index.js';

let enabled = false;
let shutdown: () => Promise<void> = () => Promise.resolve();
const tracer = () => trace.getTracer('tollgate');

export function tracingEnabled(): boolean {
  return enabled;
}

export function tracingConfigured(env: Record<string, string | undefined> = process.env): boolean {
  return (
    Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) &&
    env.OTEL_SDK_DISABLED !== 'true'
  );
}

/** Loads and registers the SDK when configured; idempotent. Returns whether tracing is on. */
export async function startTracing(
  serviceVersion: string,
  env: Record<string, string | undefined> = process.env,
): Promise<boolean> {
  if (enabled || !tracingConfigured(env)) return enabled;
  const [
    { BasicTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    { resourceFromAttributes },
    { AsyncLocalStorageContextManager },
    { W3CTraceContextPropagator },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
  ]);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': env.OTEL_SERVICE_NAME ?? 'tollgate',
      'service.version': serviceVersion,
    }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter(), {
        scheduledDelayMillis: Number(env.OTEL_BSP_SCHEDULE_DELAY ?? 1000),
      }),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  enabled = true;
  shutdown = async () => {
    enabled = false;
    await provider.shutdown();
    trace.disable();
    propagation.disable();
    context.disable();
  };
  return true;
}

/** Flushes the spans still buffered and unregisters the SDK. */
export function stopTracing(): Promise<void> {
  return shutdown();
}

/** Runs `fn` in a child span of the active one; just `fn()` when tracing is off. Errors mark the span. */
export function withSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span?: Span) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  if (!enabled) return fn(); // not async: no extra promise on the hot path
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.recordException(error instanceof Error ? error : messageOf(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(error) });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The server span of an HTTP request, continuing the caller's trace; undefined when tracing is off. */
export function startServerSpan(
  name: string,
  headers: Record<string, string | string[] | undefined>,
  attributes: Attributes,
): { span: Span; context: Context } | undefined {
  if (!enabled) return undefined;
  const parent = propagation.extract(context.active(), headers);
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

export function runInContext<T>(active: Context, fn: () => T): T {
  return context.with(active, fn);
}

/** Headers that carry the active trace to an upstream (`traceparent`); empty when tracing is off. */
export function traceHeaders(): Record<string, string> {
  if (!enabled) return {};
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

export function endSpan(span: Span, statusCode: number): void {
  span.setAttribute('http.response.status_code', statusCode);
  if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

export { SpanKind };
