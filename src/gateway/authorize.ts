/**
 * The models a request may use: the one it names (`model`) and its fallbacks (`models`), each known, allowed to the
 * key, and able to serve the endpoint when it needs a capability of its own.
 */
import { requireModelAllowed } from '../auth/index.js';
import type { CatalogModel } from '../catalog/index.js';
import type { Capabilities } from '../config/index.js';
import { GatewayError } from '../errors/index.js';
import type { KeyRecord } from '../storage/index.js';
import type { GatewayDeps } from './deps.js';

/** What an endpoint needs of its models, and how its 400 tells a model without it. */
export interface Capability {
  readonly key: keyof Capabilities;
  /** What a model without it does not do, e.g. "does not create embeddings". */
  readonly lacking: string;
  /** Its name in `GET /v1/models?capability=`. */
  readonly listed: string;
}

export const CHAT: Capability = { key: 'chat', lacking: 'does not chat', listed: 'chat' };

export const EMBEDDINGS: Capability = { key: 'embeddings', lacking: 'does not create embeddings', listed: 'embedding' };

export const TEXT_COMPLETIONS: Capability = {
  key: 'completion',
  lacking: 'does not serve text completions',
  listed: 'completion',
};

/** The request's `model`: known (404), allowed to the key (403), with the endpoint's capability (400). */
export function authorizedModel(
  deps: GatewayDeps,
  key: KeyRecord,
  name: string,
  capability?: Capability,
): CatalogModel {
  return authorized(deps.catalog.resolve(name), key, name, 'model', capability);
}

/** The request's `models`, tried after `model`: each known (404), allowed (403) and capable (400), naming `models`. */
export function fallbackModels(
  deps: GatewayDeps,
  key: KeyRecord,
  names: readonly string[] | undefined,
  capability?: Capability,
): CatalogModel[] | undefined {
  return names?.map((name) => {
    const model = deps.catalog.find(name);
    if (!model)
      throw new GatewayError('model_not_found', { message: `The model '${name}' does not exist`, param: 'models' });
    return authorized(model, key, name, 'models', capability);
  });
}

function authorized(
  model: CatalogModel,
  key: KeyRecord,
  name: string,
  param: 'model' | 'models',
  capability: Capability | undefined,
): CatalogModel {
  requireModelAllowed(key, [name, model.id, ...model.aliases]);
  if (capability && !model.capabilities[capability.key])
    throw new GatewayError('invalid_request', {
      message: `The model '${name}' ${capability.lacking}; list those that do with GET /v1/models?capability=${capability.listed}`,
      param,
    });
  return model;
}
