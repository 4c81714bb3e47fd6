import type { ModelConfig } from './schema.js';

const ALL_CHAT = {
  chat: true,
  completion: false,
  function_calling: true,
  vision: true,
  embeddings: false,
  json_mode: true,
};

/** The sandbox's text models: chat and text completions (`POST /v1/completions`). */
const SANDBOX_TEXT = { ...ALL_CHAT, completion: true };

/** Embeddings only. */
const EMBEDDINGS = {
  chat: false,
  completion: false,
  function_calling: false,
  vision: false,
  embeddings: true,
  json_mode: false,
};

/** The built-in sandbox models: deterministic, no network, priced like a small real model. */
export const SANDBOX_MODELS: ModelConfig[] = [
  {
    id: 'sandbox/echo',
    provider: 'sandbox',
    upstream_model: 'echo',
    name: 'Sandbox Echo',
    pricing: { prompt: 0.00015, completion: 0.0006, input_cache_read: 0.000075 },
    context_length: 128_000,
    max_tokens: 16_384,
    capabilities: SANDBOX_TEXT,
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
    capabilities: SANDBOX_TEXT,
    created: 1_767_225_600,
  },
  {
    id: 'sandbox/embed',
    provider: 'sandbox',
    upstream_model: 'embed',
    name: 'Sandbox Embed',
    pricing: { prompt: 0.00002, completion: 0 },
    context_length: 8_192,
    max_tokens: 0,
    capabilities: EMBEDDINGS,
    created: 1_767_225_600,
  },
];

/** Text only in, tools and JSON mode. */
const CHAT_TOOLS_JSON = {
  chat: true,
  completion: false,
  function_calling: true,
  vision: false,
  embeddings: false,
  json_mode: true,
};

/** Anthropic's web search tool: $10 per 1,000 searches. OpenAI's web search tool call costs the same. */
const WEB_SEARCH = 0.01;

/** GPT-6 models: a request whose input is above 272K tokens pays 2x input and cache, 1.5x output, on all of it. */
const OPENAI_LONG_CONTEXT = 272_000;

/**
 * Real models of the providers tollgate knows, with their public list prices (USD per 1,000 tokens) as checked on
 * 2026-11-27 (docs/providers.md says where each figure comes from). `prompt` and `completion` are the standard rate
 * (not batch); cache reads and writes, long-context tiers, dated changes and off-peak hours are priced where the
 * provider bills them. Reasoning tokens are billed as output by every provider here, so no `internal_reasoning`.
 * `created` is the model's release day (00:00 UTC).
 */
export const DEFAULT_MODELS: ModelConfig[] = [
  // OpenAI: every GPT-6 model has a single (undated) snapshot id. 1,050,000-token window of which 922K input. Cache
  // writes cost 1.25x input (the 30-minute write; GPT-6.1 Terra's 12-hour write, $2.50/M, is not told apart in
  // OpenAI's usage report).
  {
    id: 'gpt-6.2-astra',
    provider: 'openai',
    name: 'GPT-6.2 Astra',
    pricing: {
      prompt: 0.008,
      completion: 0.04,
      input_cache_read: 0.0004,
      input_cache_write: 0.01,
      web_search: WEB_SEARCH,
      tiers: [
        {
          above_prompt_tokens: OPENAI_LONG_CONTEXT,
          prompt: 0.016,
          completion: 0.06,
          input_cache_read: 0.0008,
          input_cache_write: 0.02,
        },
      ],
    },
    context_length: 1_050_000,
    max_tokens: 128_000,
    capabilities: ALL_CHAT,
    created: 1_794_873_600, // 2026-11-17
  },
  {
    id: 'gpt-6.2-sol',
    provider: 'openai',
    name: 'GPT-6.2 Sol',
    pricing: {
      prompt: 0.002,
      completion: 0.01,
      input_cache_read: 0.0001,
      input_cache_write: 0.0025,
      web_search: WEB_SEARCH,
      tiers: [
        {
          above_prompt_tokens: OPENAI_LONG_CONTEXT,
          prompt: 0.004,
          completion: 0.015,
          input_cache_read: 0.0002,
          input_cache_write: 0.005,
        },
      ],
    },
    context_length: 1_050_000,
    max_tokens: 128_000,
    capabilities: ALL_CHAT,
    created: 1_794_873_600, // 2026-11-17
  },
  {
    id: 'gpt-6.1-sol',
    provider: 'openai',
    name: 'GPT-6.1 Sol',
    pricing: {
      prompt: 0.002,
      completion: 0.01,
      input_cache_read: 0.0001,
      input_cache_write: 0.0025,
      web_search: WEB_SEARCH,
      tiers: [
        {
          above_prompt_tokens: OPENAI_LONG_CONTEXT,
          prompt: 0.004,
          completion: 0.015,
          input_cache_read: 0.0002,
          input_cache_write: 0.005,
        },
      ],
    },
    context_length: 1_050_000,
    max_tokens: 128_000,
    capabilities: ALL_CHAT,
    created: 1_790_640_000, // 2026-09-29
  },
  {
    id: 'gpt-6.1-terra',
    provider: 'openai',
    name: 'GPT-6.1 Terra',
    pricing: {
      prompt: 0.001,
      completion: 0.005,
      input_cache_read: 0.00005,
      input_cache_write: 0.00125,
      web_search: WEB_SEARCH,
      tiers: [
        {
          above_prompt_tokens: OPENAI_LONG_CONTEXT,
          prompt: 0.002,
          completion: 0.0075,
          input_cache_read: 0.0001,
          input_cache_write: 0.0025,
        },
      ],
    },
    context_length: 1_050_000,
    max_tokens: 128_000,
    capabilities: ALL_CHAT,
    created: 1_792_972_800, // 2026-10-26
  },
  {
    // The model Codex CLI asks for when none is configured (its bundled default since 0.153.4).
    id: 'gpt-6-astra',
    provider: 'openai',
    name: 'GPT-6 Astra',
    pricing: {
      prompt: 0.01,
      completion: 0.05,
      input_cache_read: 0.001,
      input_cache_write: 0.0125,
      web_search: WEB_SEARCH,
      tiers: [
        {
          above_prompt_tokens: OPENAI_LONG_CONTEXT,
          prompt: 0.02,
          completion: 0.075,
          input_cache_read: 0.002,
          input_cache_write: 0.025,
        },
      ],
    },
    context_length: 1_050_000,
    max_tokens: 128_000,
    capabilities: ALL_CHAT,
    created: 1_788_393_600, // 2026-09-03
  },
  {
    id: 'gpt-6-luna',
    provider: 'openai',
    name: 'GPT-6 Luna',
    pricing: {
      prompt: 0.0001,
      completion: 0.0005,
      input_cache_read: 0.00001,
      input_cache_write: 0.000125,
      web_search: WEB_SEARCH,
      tiers: [
        {
          above_prompt_tokens: OPENAI_LONG_CONTEXT,
          prompt: 0.0002,
          completion: 0.00075,
          input_cache_read: 0.00002,
          input_cache_write: 0.00025,
        },
      ],
    },
    context_length: 1_050_000,
    max_tokens: 128_000,
    capabilities: ALL_CHAT,
    created: 1_790_035_200, // 2026-09-22
  },

  // Anthropic (Messages API; JSON mode through a forced tool): model ids have been dateless since the Claude 4.6
  // generation (Haiku 4.5 keeps its dated id, with the dateless name as alias). Cache writes are 5-minute
  // (`input_cache_write`) or 1-hour (`input_cache_write_1h`); cache reads are "cache hits and refreshes". Every model
  // serves its whole context window at one rate except Haiku 5.5.
  {
    // Anthropic's top model. Cache read 0.025x input like Fable 5.1; writes 1.25x (5 min) and 2x (1 h).
    id: 'claude-fable-5-2',
    provider: 'anthropic',
    name: 'Claude Fable 5.2',
    pricing: {
      prompt: 0.008,
      completion: 0.04,
      input_cache_read: 0.0002,
      input_cache_write: 0.01,
      input_cache_write_1h: 0.016,
      web_search: WEB_SEARCH,
    },
    context_length: 1_000_000,
    max_tokens: 128_000,
    capabilities: ALL_CHAT,
    created: 1_794_182_400, // 2026-11-09
  },
  {
    id: 'claude-fable-5-1',
    provider: 'anthropic',
    name: 'Claude Fable 5.1',
    pricing: {
      prompt: 0.01,
      completion: 0.05,
      input_cache_read: 0.00025,
      input_cache_write: 0.0125,
      input_cache_write_1h: 0.02,
      web_search: WEB_SEARCH,
    },
    context_length: 1_000_000,
    max_tokens: 128_000,
    capabilities: ALL_CHAT,
    created: 1_788_220_800, // 2026-09-01
  },
  {
    id: 'claude-opus-5-5',
    provider: 'anthropic',
    name: 'Claude Opus 5.5',
    pricing: {
      prompt: 0.004,
      completion: 0.02,
      input_cache_read: 0.0002,
      input_cache_write: 0.005,
      input_cache_write_1h: 0.008,
      web_search: WEB_SEARCH,
    },
    context_length: 1_000_000,
    max_tokens: 128_000,
    capabilities: ALL_CHAT,
    created: 1_790_121_600, // 2026-09-23
  },
  {
    id: 'claude-sonnet-5-5',
    provider: 'anthropic',
    name: 'Claude Sonnet 5.5',
    pricing: {
      prompt: 0.002,
      completion: 0.01,
      input_cache_read: 0.0001,
      input_cache_write: 0.0025,
      input_cache_write_1h: 0.004,
      web_search: WEB_SEARCH,
    },
    context_length: 1_000_000,
    max_tokens: 128_000,
    capabilities: ALL_CHAT,
    created: 1_790_553_600, // 2026-09-28
  },
  {
    // Tiered: a prompt above 100K tokens pays five times the rates on every token.
    id: 'claude-haiku-5-5',
    provider: 'anthropic',
    name: 'Claude Haiku 5.5',
    pricing: {
      prompt: 0.0001,
      completion: 0.0005,
      input_cache_read: 0.00001,
      input_cache_write: 0.000125,
      input_cache_write_1h: 0.0002,
      web_search: WEB_SEARCH,
      tiers: [
        {
          above_prompt_tokens: 100_000,
          prompt: 0.0005,
          completion: 0.0025,
          input_cache_read: 0.00005,
          input_cache_write: 0.000625,
          input_cache_write_1h: 0.001,
        },
      ],
    },
    context_length: 1_000_000,
    max_tokens: 128_000,
    capabilities: ALL_CHAT,
    created: 1_791_331_200, // 2026-10-07
  },
  {
    // Legacy, still served; what Claude Code 2.1 asks for as `opus` on the Anthropic API.
    id: 'claude-opus-4-8',
    provider: 'anthropic',
    name: 'Claude Opus 4.8',
    pricing: {
      prompt: 0.005,
      completion: 0.025,
      input_cache_read: 0.0005,
      input_cache_write: 0.00625,
      input_cache_write_1h: 0.01,
      web_search: WEB_SEARCH,
    },
    context_length: 1_000_000,
    max_tokens: 128_000,
    capabilities: ALL_CHAT,
    created: 1_779_926_400, // 2026-05-28
  },
  {
    // Legacy, still served; Claude Code 2.1's small fast model (`haiku`, background tasks).
    id: 'claude-haiku-4-5-20251001',
    aliases: ['claude-haiku-4-5'],
    provider: 'anthropic',
    name: 'Claude Haiku 4.5',
    pricing: {
      prompt: 0.001,
      completion: 0.005,
      input_cache_read: 0.0001,
      input_cache_write: 0.00125,
      input_cache_write_1h: 0.002,
      web_search: WEB_SEARCH,
    },
    context_length: 200_000,
    max_tokens: 64_000,
    capabilities: ALL_CHAT,
    created: 1_760_486_400, // 2025-10-15
  },

  // Google Gemini (Developer API, generateContent). The 3.6, 3.7 and 3.8 Flash models sell at a launch price
  // through 2026-12-31 and at twice that from 2027-01-01 (input, output and cache reads alike).
  {
    id: 'gemini-3.8-flash',
    provider: 'gemini',
    name: 'Gemini 3.8 Flash',
    pricing: {
      prompt: 0.00075,
      completion: 0.00375,
      input_cache_read: 0.000075,
      changes: [
        { effective_from: '2027-01-01T00:00:00Z', prompt: 0.0015, completion: 0.0075, input_cache_read: 0.00015 },
      ],
    },
    context_length: 1_048_576,
    max_tokens: 65_536,
    capabilities: ALL_CHAT,
    created: 1_788_307_200, // 2026-09-02
  },
  {
    id: 'gemini-3.7-flash',
    provider: 'gemini',
    name: 'Gemini 3.7 Flash',
    pricing: {
      prompt: 0.00075,
      completion: 0.00375,
      input_cache_read: 0.000075,
      changes: [
        { effective_from: '2027-01-01T00:00:00Z', prompt: 0.0015, completion: 0.0075, input_cache_read: 0.00015 },
      ],
    },
    context_length: 1_048_576,
    max_tokens: 65_536,
    capabilities: ALL_CHAT,
    created: 1_786_579_200, // 2026-08-13
  },
  {
    // Launched at $1.50 / $7.50 per 1M, now at the same launch price as 3.7 and 3.8 Flash.
    id: 'gemini-3.6-flash',
    provider: 'gemini',
    name: 'Gemini 3.6 Flash',
    pricing: {
      prompt: 0.00075,
      completion: 0.00375,
      input_cache_read: 0.000075,
      changes: [
        { effective_from: '2027-01-01T00:00:00Z', prompt: 0.0015, completion: 0.0075, input_cache_read: 0.00015 },
      ],
    },
    context_length: 1_048_576,
    max_tokens: 65_536,
    capabilities: ALL_CHAT,
    created: 1_784_592_000, // 2026-07-21
  },
  {
    // A prompt above 200K tokens pays $4 / $18 per 1M (cache reads $0.40) on every token.
    id: 'gemini-3.1-pro-preview',
    provider: 'gemini',
    name: 'Gemini 3.1 Pro (preview)',
    pricing: {
      prompt: 0.002,
      completion: 0.012,
      input_cache_read: 0.0002,
      tiers: [{ above_prompt_tokens: 200_000, prompt: 0.004, completion: 0.018, input_cache_read: 0.0004 }],
    },
    context_length: 1_048_576,
    max_tokens: 65_536,
    capabilities: ALL_CHAT,
    created: 1_771_459_200, // 2026-02-19
  },
  {
    id: 'gemini-3.5-flash',
    provider: 'gemini',
    name: 'Gemini 3.5 Flash',
    pricing: { prompt: 0.0015, completion: 0.009, input_cache_read: 0.00015 },
    context_length: 1_048_576,
    max_tokens: 65_536,
    capabilities: ALL_CHAT,
    created: 1_779_148_800, // 2026-05-19
  },
  {
    id: 'gemini-3.5-flash-lite',
    provider: 'gemini',
    name: 'Gemini 3.5 Flash-Lite',
    pricing: { prompt: 0.0003, completion: 0.0025, input_cache_read: 0.00003 },
    context_length: 1_048_576,
    max_tokens: 65_536,
    capabilities: ALL_CHAT,
    created: 1_784_592_000, // 2026-07-21
  },

  // Mistral: dated ids; the product names and `-latest` names are aliases. Mistral publishes no separate output
  // cap for most models, so max_tokens is the context window.
  {
    // Public preview (weights of 2026-10-29), at its list price; no dated id yet. `mistral-large-latest` still
    // names Large 3.
    id: 'mistral-large-4',
    provider: 'mistral',
    name: 'Mistral Large 4 (preview)',
    pricing: { prompt: 0.00136, completion: 0.00418 },
    context_length: 524_288,
    max_tokens: 262_144,
    capabilities: ALL_CHAT,
    created: 1_791_244_800, // 2026-10-06
  },
  {
    id: 'mistral-medium-2604',
    aliases: ['mistral-medium-3.5', 'mistral-medium-latest'],
    provider: 'mistral',
    name: 'Mistral Medium 3.5',
    pricing: { prompt: 0.0015, completion: 0.0075, input_cache_read: 0.00015 },
    context_length: 262_144,
    max_tokens: 262_144,
    capabilities: ALL_CHAT,
    created: 1_777_420_800, // 2026-04-29
  },
  {
    id: 'mistral-large-2512',
    aliases: ['mistral-large-3', 'mistral-large-latest'],
    provider: 'mistral',
    name: 'Mistral Large 3',
    pricing: { prompt: 0.0005, completion: 0.0015 },
    context_length: 262_144,
    max_tokens: 262_144,
    capabilities: ALL_CHAT,
    created: 1_764_633_600, // 2025-12-02
  },
  {
    id: 'mistral-small-2603',
    aliases: ['mistral-small-4', 'mistral-small-latest'],
    provider: 'mistral',
    name: 'Mistral Small 4',
    pricing: { prompt: 0.00015, completion: 0.0006 },
    context_length: 262_144,
    max_tokens: 262_144,
    capabilities: ALL_CHAT,
    created: 1_773_619_200, // 2026-03-16
  },

  // Groq: open models, so our ids carry a `groq/` prefix; upstream_model is Groq's own id. Cached input costs half.
  // (Groq retired llama-3.3-70b-versatile and llama-3.1-8b-instant on 2026-08-16.)
  {
    id: 'groq/openai/gpt-oss-120b',
    aliases: ['groq/gpt-oss-120b'],
    provider: 'groq',
    upstream_model: 'openai/gpt-oss-120b',
    name: 'GPT-OSS 120B (Groq)',
    pricing: { prompt: 0.00015, completion: 0.0006, input_cache_read: 0.000075 },
    context_length: 131_072,
    max_tokens: 65_536,
    capabilities: CHAT_TOOLS_JSON,
    created: 1_754_352_000, // 2025-08-05
  },
  {
    id: 'groq/openai/gpt-oss-20b',
    aliases: ['groq/gpt-oss-20b'],
    provider: 'groq',
    upstream_model: 'openai/gpt-oss-20b',
    name: 'GPT-OSS 20B (Groq)',
    pricing: { prompt: 0.000075, completion: 0.0003, input_cache_read: 0.0000375 },
    context_length: 131_072,
    max_tokens: 65_536,
    capabilities: CHAT_TOOLS_JSON,
    created: 1_754_352_000, // 2025-08-05
  },
  {
    // A preview model on Groq.
    id: 'groq/qwen/qwen3.6-27b',
    aliases: ['groq/qwen3.6-27b'],
    provider: 'groq',
    upstream_model: 'qwen/qwen3.6-27b',
    name: 'Qwen3.6 27B (Groq)',
    pricing: { prompt: 0.0006, completion: 0.003, input_cache_read: 0.0003 },
    context_length: 131_072,
    max_tokens: 16_384,
    capabilities: ALL_CHAT,
    created: 1_776_816_000, // 2026-04-22
  },

  // DeepSeek: peak hours are 01:00-04:00 and 06:00-10:00 UTC on weekdays, every other hour is off-peak at half
  // price. `daily` has no weekdays, so weekend and Chinese-holiday peak hours are billed at the peak rate.
  {
    // DeepSeek-V4.1-Flash. The legacy name deepseek-v4-flash is still accepted and billed like Flash.
    id: 'deepseek-flash',
    aliases: ['deepseek-v4-flash'],
    provider: 'deepseek',
    name: 'DeepSeek V4.1 Flash',
    pricing: {
      prompt: 0.0003,
      completion: 0.0012,
      input_cache_read: 0.000006,
      daily: [
        { from_utc: '10:00', to_utc: '01:00', prompt: 0.00015, completion: 0.0006, input_cache_read: 0.000003 },
        { from_utc: '04:00', to_utc: '06:00', prompt: 0.00015, completion: 0.0006, input_cache_read: 0.000003 },
      ],
    },
    context_length: 1_000_000,
    max_tokens: 384_000,
    capabilities: ALL_CHAT,
    created: 1_788_998_400, // 2026-09-10
  },
  {
    id: 'deepseek-v4-pro',
    provider: 'deepseek',
    name: 'DeepSeek V4 Pro',
    pricing: {
      prompt: 0.00132,
      completion: 0.00396,
      input_cache_read: 0.000044,
      daily: [
        { from_utc: '10:00', to_utc: '01:00', prompt: 0.00066, completion: 0.00198, input_cache_read: 0.000022 },
        { from_utc: '04:00', to_utc: '06:00', prompt: 0.00066, completion: 0.00198, input_cache_read: 0.000022 },
      ],
    },
    context_length: 1_000_000,
    max_tokens: 384_000,
    capabilities: CHAT_TOOLS_JSON,
    created: 1_776_988_800, // 2026-04-24
  },

  // Embeddings: input tokens only (`context_length` is the most one input may have). Dimensions by default:
  // OpenAI small 1,536 and large 3,072, Gemini 3,072, Mistral 1,024, BGE large 1,024; `dimensions` shortens
  // OpenAI's and Gemini's. Gemini Embedding 2 also embeds images, audio and video, at other rates: text only here.
  {
    id: 'text-embedding-3-small',
    provider: 'openai',
    name: 'OpenAI Text Embedding 3 Small',
    pricing: { prompt: 0.00002, completion: 0 },
    context_length: 8_191,
    max_tokens: 0,
    capabilities: EMBEDDINGS,
    created: 1_706_140_800, // 2024-01-25
  },
  {
    id: 'text-embedding-3-large',
    provider: 'openai',
    name: 'OpenAI Text Embedding 3 Large',
    pricing: { prompt: 0.00013, completion: 0 },
    context_length: 8_191,
    max_tokens: 0,
    capabilities: EMBEDDINGS,
    created: 1_706_140_800, // 2024-01-25
  },
  {
    id: 'gemini-embedding-2',
    provider: 'gemini',
    name: 'Gemini Embedding 2',
    pricing: { prompt: 0.0002, completion: 0 },
    context_length: 8_192,
    max_tokens: 0,
    capabilities: EMBEDDINGS,
    created: 1_776_816_000, // 2026-04-22
  },
  {
    id: 'gemini-embedding-001',
    provider: 'gemini',
    name: 'Gemini Embedding 001',
    pricing: { prompt: 0.00015, completion: 0 },
    context_length: 2_048,
    max_tokens: 0,
    capabilities: EMBEDDINGS,
    created: 1_752_451_200, // 2025-07-14
  },
  {
    id: 'mistral-embed',
    provider: 'mistral',
    name: 'Mistral Embed',
    pricing: { prompt: 0.0001, completion: 0 },
    context_length: 8_192,
    max_tokens: 0,
    capabilities: EMBEDDINGS,
    created: 1_702_252_800, // 2023-12-11
  },
  {
    id: 'BAAI/bge-large-en-v1.5',
    provider: 'together',
    name: 'BGE Large EN v1.5 (Together)',
    pricing: { prompt: 0.00002, completion: 0 },
    context_length: 512,
    max_tokens: 0,
    capabilities: EMBEDDINGS,
    created: 1_694_476_800, // 2023-09-12
  },
];
