/** A test gateway whose Anthropic and Gemini models are served by local servers speaking those APIs' formats. */
import { defaultConfig } from '../../src/config/index.js';
import { startGateway, type TestGateway } from './gateway.js';
import { startMockAnthropic, type MockAnthropic } from './mock-anthropic.js';
import { startMockGemini, type MockGemini } from './mock-gemini.js';

export interface NativeProviders {
  gw: TestGateway;
  anthropic: MockAnthropic;
  gemini: MockGemini;
  close(): Promise<void>;
}

export async function startWithNativeProviders(): Promise<NativeProviders> {
  const anthropic = await startMockAnthropic({ apiKey: 'sk-ant-e2e' });
  const gemini = await startMockGemini({ apiKey: 'gm-e2e' });
  const gw = await startGateway({
    env: {
      ANTHROPIC_API_KEY: 'sk-ant-e2e',
      ANTHROPIC_BASE_URL: anthropic.url,
      GEMINI_API_KEY: 'gm-e2e',
      GEMINI_BASE_URL: gemini.url,
    },
    // Error mapping is under test: no circuit opens, retries come quickly.
    overrides: { routing: { ...defaultConfig().routing, backoff_ms: 5, breaker_failures: 1_000 } },
  });
  return {
    gw,
    anthropic,
    gemini,
    close: async () => {
      await gw.close();
      await anthropic.close();
      await gemini.close();
    },
  };
}
