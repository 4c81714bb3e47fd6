/**
 * The providers tollgate knows by name. Each is configured by `<ENV>_API_KEY` / `<ENV>_BASE_URL` (or the same
 * names under `providers:` in the YAML file). Keyless providers (local servers) are configured by a base URL.
 */
/**
 * The wire formats adapters speak: OpenAI's chat completions, Anthropic's Messages and Gemini's generateContent.
 * A new wire format is one word here and one adapter folder in `providers/`.
 */
export const PROVIDER_APIS = ['openai', 'anthropic', 'gemini'] as const;
export type ProviderApi = (typeof PROVIDER_APIS)[number];

export interface KnownProvider {
  id: string;
  api: ProviderApi;
  name: string;
  env: string;
  defaultBaseUrl: string;
  keyless: boolean;
  /** Serves OpenAI's Responses API (`POST /responses`) natively: `/v1/responses` passes through to it. */
  responses?: boolean;
}

export const KNOWN_PROVIDERS: readonly KnownProvider[] = [
  {
    id: 'openai',
    api: 'openai',
    name: 'OpenAI',
    env: 'OPENAI',
    defaultBaseUrl: 'https://api.openai.com/v1',
    keyless: false,
    responses: true,
  },
  // Native adapters: Anthropic's Messages API and Gemini's generateContent.
  {
    id: 'anthropic',
    api: 'anthropic',
    name: 'Anthropic',
    env: 'ANTHROPIC',
    defaultBaseUrl: 'https://api.anthropic.com/v1',
    keyless: false,
  },
  {
    id: 'gemini',
    api: 'gemini',
    name: 'Google Gemini',
    env: 'GEMINI',
    defaultBaseUrl: 'https://generativelanguage.googleapis.com/v1beta',
    keyless: false,
  },
  {
    id: 'mistral',
    api: 'openai',
    name: 'Mistral AI',
    env: 'MISTRAL',
    defaultBaseUrl: 'https://api.mistral.ai/v1',
    keyless: false,
  },
  {
    id: 'groq',
    api: 'openai',
    name: 'Groq',
    env: 'GROQ',
    defaultBaseUrl: 'https://api.groq.com/openai/v1',
    keyless: false,
  },
  {
    id: 'deepseek',
    api: 'openai',
    name: 'DeepSeek',
    env: 'DEEPSEEK',
    defaultBaseUrl: 'https://api.deepseek.com/v1',
    keyless: false,
  },
  {
    id: 'together',
    api: 'openai',
    name: 'Together AI',
    env: 'TOGETHER',
    defaultBaseUrl: 'https://api.together.xyz/v1',
    keyless: false,
  },
  {
    id: 'ollama',
    api: 'openai',
    name: 'Ollama',
    env: 'OLLAMA',
    defaultBaseUrl: 'http://127.0.0.1:11434/v1',
    keyless: true,
  },
  { id: 'vllm', api: 'openai', name: 'vLLM', env: 'VLLM', defaultBaseUrl: 'http://127.0.0.1:8000/v1', keyless: true },
];

export const SANDBOX_PROVIDER_ID = 'sandbox';
