export { CAPABILITY_ALIASES, Catalog, renderModel, type CatalogModel, type DeploymentRef, type HealthSource, type ModelFilter, type ModelStatus } from './catalog.js';
export { PerformanceTracker, type Observation, type PerformanceFigures } from './performance.js';
