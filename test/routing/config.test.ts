/** Deployments and routing settings in the configuration, and how the catalog reads them. */
import { describe, expect, it } from 'vitest';
import { Catalog } from '../../src/catalog/index.js';
import { ConfigError, defaultConfig, loadConfig, type ModelConfig } from '../../src/config/index.js';
import { DEFAULT_MODELS } from '../../src/config/default-catalog.js';

const base = DEFAULT_MODELS.find((m) => m.id === 'claude-haiku-5-5')!;
const load = (models: ModelConfig[], env: Record<string, string> = {}, providers = {}) =>
  loadConfig({ env: { TOLLGATE_DATA_DIR: '/tmp/unused', ...env }, file: undefined, overrides: { models, providers } });

describe('deployments', () => {
  it('an unknown provider in a deployment stops start-up with its path', () => {
    const attempt = () =>
      load([{ ...base, id: 'x', deployments: [{ provider: 'anthropic' }, { provider: 'nowhere' }] }]);
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(/models\[\d+\] \(x\)\.deployments\[1\]\.provider: unknown provider "nowhere"/);
  });

  it('weights are whole numbers from 1 to 1000; a deployment list is not empty', () => {
    expect(() => load([{ ...base, id: 'x', deployments: [{ provider: 'anthropic', weight: 0 }] }])).toThrow(
      /deployments\.0\.weight/,
    );
    expect(() => load([{ ...base, id: 'x', deployments: [] }])).toThrow(/deployments/);
  });

  it('embeddings and text completions only on providers whose protocol has them', () => {
    const capabilities = { ...base.capabilities, chat: false };
    expect(() =>
      load([{ ...base, id: 'x', capabilities: { ...capabilities, completion: true }, provider: 'gemini' }]),
    ).toThrow(/\(x\)\.capabilities\.completion: provider "gemini" does not serve text completions/);
    expect(() =>
      load([
        {
          ...base,
          id: 'x',
          capabilities: { ...capabilities, completion: true },
          deployments: [{ provider: 'groq' }, { provider: 'anthropic' }],
        },
      ]),
    ).toThrow(/provider "anthropic" does not serve text completions/);
    expect(() =>
      load([{ ...base, id: 'x', max_tokens: 0, capabilities: { ...capabilities, embeddings: true } }]),
    ).toThrow(/\(x\)\.capabilities\.embeddings: provider "anthropic" does not create embeddings/);
    const groq = load([{ ...base, id: 'x', capabilities: { ...capabilities, completion: true }, provider: 'groq' }]);
    expect(groq.models.find((m) => m.id === 'x')?.capabilities.completion).toBe(true);
  });

  it('a model is active when any deployment is configured; each deployment keeps its upstream name', () => {
    const config = load(
      [
        {
          ...base,
          id: 'x',
          upstream_model: 'default-name',
          deployments: [{ provider: 'anthropic' }, { provider: 'mine', upstream_model: 'their-name', weight: 5 }],
        },
      ],
      {},
      { mine: { api: 'anthropic', base_url: 'http://127.0.0.1:1/v1' } },
    );
    const model = new Catalog(config).resolve('x');
    expect(model.deployments).toEqual([
      { providerId: 'anthropic', upstreamModel: 'default-name', weight: undefined, configured: false },
      { providerId: 'mine', upstreamModel: 'their-name', weight: 5, configured: true },
    ]);
    expect([model.active, model.statusMessage]).toEqual([true, 'Available']);
    expect(new Catalog(load([{ ...base, id: 'y' }])).resolve('y').statusMessage).toContain('ANTHROPIC_API_KEY');
  });

  it('routing settings have defaults and bounds; a custom provider may name its wire format', () => {
    expect(load([]).routing).toEqual(defaultConfig().routing);
    expect(() =>
      loadConfig({
        env: { TOLLGATE_DATA_DIR: '/tmp/unused' },
        file: undefined,
        overrides: { routing: { ...defaultConfig().routing, retries: 9 } },
      }),
    ).toThrow(/routing\.retries/);
    expect(() => load([], {}, { mine: { api: 'cohere', base_url: 'http://x' } })).toThrow(/providers\.mine\.api/);
  });
});
