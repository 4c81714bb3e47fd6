export {
  CAPABILITY_ALIASES,
  Catalog,
  renderModel,
  type CatalogModel,
  type DeploymentRef,
  type HealthSource,
  type ModelFilter,
  type ModelStatus,
} from './catalog.js';
export { LiveFigures, type Observation, type ModelFigures } from './live-figures.js';
