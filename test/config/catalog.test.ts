import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isExactUsd } from '../../src/money/index.js';
import { DEFAULT_MODELS } from '../../src/config/default-catalog.js';
import { loadConfig, type Config, type ModelConfig } from '../../src/config/index.js';

const PROVIDERS = ['openai', 'anthropic', 'gemini', 'mistral', 'groq', 'deepseek'] as const;

describe('built-in model catalog', () => {
  const originalCwd = process.cwd();
  let emptyDir: string;
  let config: Config;
  let defaults: ModelConfig[];

  beforeAll(() => {
    // loadConfig reads ./tollgate.config.yaml when present; run it where there is none.
    emptyDir = mkdtempSync(join(tmpdir(), 'tollgate-catalog-'));
    process.chdir(emptyDir);
    config = loadConfig({ env: {}, file: undefined });
    const ids = new Set(DEFAULT_MODELS.map((model) => model.id));
    defaults = config.models.filter((model) => ids.has(model.id));
  });

  afterAll(() => {
    process.chdir(originalCwd);
    rmSync(emptyDir, { recursive: true, force: true });
  });

  it('loads every default model into the catalog', () => {
    expect(defaults).toHaveLength(DEFAULT_MODELS.length);
    expect(new Set(DEFAULT_MODELS.map((model) => model.id)).size).toBe(DEFAULT_MODELS.length);
  });

  it.each(PROVIDERS)('has at least two models of %s', (provider) => {
    expect(defaults.filter((model) => model.provider === provider).length).toBeGreaterThanOrEqual(2);
  });

  it('resolves every id and alias to exactly one model', () => {
    const owners = new Map<string, Set<string>>();
    for (const model of config.models) {
      for (const name of [model.id, ...(model.aliases ?? [])]) {
        if (!owners.has(name)) owners.set(name, new Set());
        owners.get(name)!.add(model.id);
      }
    }
    for (const model of config.models) {
      for (const alias of model.aliases ?? []) {
        expect(owners.get(alias), `alias ${alias}`).toEqual(new Set([model.id]));
        expect(alias).not.toBe(model.id);
      }
    }
    const shared = [...owners].filter(([, ids]) => ids.size > 1).map(([name]) => name);
    expect(shared).toEqual([]);
  });

  it('prices every model in positive USD exact to nine decimals', () => {
    for (const model of defaults) {
      for (const side of ['prompt', 'completion'] as const) {
        const price = model.pricing[side];
        expect(isExactUsd(price), `${model.id} ${side}`).toBe(true);
        // Embedding models generate nothing: their completion price is 0.
        if (side === 'completion' && model.capabilities.embeddings) expect(price, model.id).toBe(0);
        else expect(price, `${model.id} ${side}`).toBeGreaterThan(0);
      }
      // Per 1,000 tokens: no list price in the catalog reaches $1 per 1K.
      expect(model.pricing.prompt, model.id).toBeLessThan(1);
      expect(model.pricing.completion, model.id).toBeLessThan(1);
    }
  });

  it('keeps max_tokens within the context window, and 0 only for embedding models', () => {
    for (const model of defaults) {
      expect(Number.isInteger(model.max_tokens), model.id).toBe(true);
      if (model.capabilities.embeddings) expect(model.max_tokens, model.id).toBe(0);
      else expect(model.max_tokens, model.id).toBeGreaterThan(0);
      expect(model.max_tokens, model.id).toBeLessThanOrEqual(model.context_length);
    }
  });

  it('describes chat or embedding models (never both) with release dates in unix seconds', () => {
    expect(defaults.filter((model) => model.capabilities.embeddings).length).toBeGreaterThanOrEqual(5);
    for (const model of defaults) {
      expect(model.capabilities.chat, model.id).toBe(!model.capabilities.embeddings);
      expect(model.capabilities.completion, model.id).toBe(false);
      // Seconds, not milliseconds: between 2023 and 2033.
      expect(model.created, model.id).toBeGreaterThan(1_672_531_200);
      expect(model.created, model.id).toBeLessThan(2_000_000_000);
    }
  });

  it('prefixes Groq-hosted models and names their upstream id', () => {
    const groq = defaults.filter((model) => model.provider === 'groq');
    for (const model of groq) {
      expect(model.id.startsWith('groq/'), model.id).toBe(true);
      expect(model.upstream_model, model.id).toBe(model.id.slice('groq/'.length));
    }
  });

  it('sets upstream_model only when it differs from the id', () => {
    for (const model of defaults) {
      if (model.upstream_model !== undefined) expect(model.upstream_model, model.id).not.toBe(model.id);
    }
  });

  it('leaves the defaults out when default_models is false', () => {
    const bare = loadConfig({ env: {}, overrides: { default_models: false } });
    const ids = new Set(bare.models.map((model) => model.id));
    for (const model of DEFAULT_MODELS) expect(ids.has(model.id), model.id).toBe(false);
  });
});
