import type { ModelConfig } from './schema.js';

const ALL_CHAT = {
  chat: true,
  completion: false,
  function_calling: true,
  vision: true,
  embeddings: false,
  json_mode: true,
};

/** The built-in sandbox models: deterministic, no network, priced like a small real model. */
export const SANDBOX_MODELS: ModelConfig[] = [
  {
    id: 'sandbox/echo',
    provider: 'sandbox',
    upstream_model: 'echo',
    name: 'Sandbox Echo',
    pricing: { prompt: 0.00015, completion: 0.0006 },
    context_length: 128_000,
    max_tokens: 16_384,
    capabilities: ALL_CHAT,
    created: 1_767_225_600,
  },
  {
    id: 'sandbox/lorem',
    provider: 'sandbox',
    upstream_model: 'lorem',
    name: 'Sandbox Lorem',
    pricing: { prompt: 0.00015, completion: 0.0006 },
    context_length: 128_000,
    max_tokens: 16_384,
    capabilities: ALL_CHAT,
    created: 1_767_225_600,
  },
];

/** Real models of the providers tollgate knows, with their public list prices (USD per 1,000 tokens). */
export const DEFAULT_MODELS: ModelConfig[] = [
  {
    id: 'gpt-4o-mini-2024-07-18',
    aliases: ['gpt-4o-mini'],
    provider: 'openai',
    pricing: { prompt: 0.00015, completion: 0.0006 },
    context_length: 128_000,
    max_tokens: 16_384,
    capabilities: ALL_CHAT,
    created: 1_721_260_800,
  },
];
