/**
 * The providers tollgate knows by name. Each is configured by `<ENV>_API_KEY` / `<ENV>_BASE_URL` (or the same
 * names under `providers:` in the YAML file). Keyless providers (local servers) are configured by a base URL.
 */
export interface KnownProvider {
  id: string;
  name: string;
  env: string;
  defaultBaseUrl: string;
  keyless: boolean;
}

export const KNOWN_PROVIDERS: readonly KnownProvider[] = [
  { id: 'openai', name: 'OpenAI', env: 'OPENAI', defaultBaseUrl: 'https://api.openai.com/v1', keyless: false },
  // Anthropic and Gemini are reached through their OpenAI-compatible endpoints until their native adapters land.
  { id: 'anthropic', name: 'Anthropic', env: 'ANTHROPIC', defaultBaseUrl: 'https://api.anthropic.com/v1', keyless: false },
  {
    id: 'gemini',
    name: 'Google Gemini',
    env: 'GEMINI',
    defaultBaseUrl: 'https://generativelanguage.googleapis.com/v1beta/openai',
    keyless: false,
  },
  { id: 'mistral', name: 'Mistral AI', env: 'MISTRAL', defaultBaseUrl: 'https://api.mistral.ai/v1', keyless: false },
  { id: 'groq', name: 'Groq', env: 'GROQ', defaultBaseUrl: 'https://api.groq.com/openai/v1', keyless: false },
  { id: 'deepseek', name: 'DeepSeek', env: 'DEEPSEEK', defaultBaseUrl: 'https://api.deepseek.com/v1', keyless: false },
  { id: 'together', name: 'Together AI', env: 'TOGETHER', defaultBaseUrl: 'https://api.together.xyz/v1', keyless: false },
  { id: 'ollama', name: 'Ollama', env: 'OLLAMA', defaultBaseUrl: 'http://127.0.0.1:11434/v1', keyless: true },
  { id: 'vllm', name: 'vLLM', env: 'VLLM', defaultBaseUrl: 'http://127.0.0.1:8000/v1', keyless: true },
];

export const SANDBOX_PROVIDER_ID = 'sandbox';
