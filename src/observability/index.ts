export { Metrics } from './metrics.js';
export { accessLogger, createLogger } from './logger.js';
export {
  endSpan,
  runInContext,
  startServerSpan,
  startTracing,
  stopTracing,
  traceHeaders,
  tracingEnabled,
  withSpan,
  SpanKind,
} from './tracing.js';
