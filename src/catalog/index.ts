export { CAPABILITY_ALIASES, Catalog, renderModel, type CatalogModel, type ModelFilter } from './catalog.js';
export { PerformanceTracker, type Observation, type PerformanceFigures } from './performance.js';
