export { Metrics } from './metrics.js';
export { createLogger } from './logger.js';
