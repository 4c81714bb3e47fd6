/** The human name of a model configured without one, read from its id. */
import { describe, expect, it } from 'vitest';
import { displayNameOf } from '../../src/catalog/display-name.js';

describe('displayNameOf', () => {
  it.each([
    ['claude-sonnet-4-5', 'Claude Sonnet 4.5'],
    ['claude-haiku-4-5-20251001', 'Claude Haiku 4.5'],
    ['claude-3-7-sonnet-latest', 'Claude 3.7 Sonnet Latest'],
    ['gpt-4o-mini', 'GPT-4o Mini'],
    ['gpt-6.2-astra', 'GPT-6.2 Astra'],
    ['sandbox/echo', 'Sandbox Echo'],
    ['llama-70b', 'Llama 70b'],
    ['mistral_large:2', 'Mistral Large 2'],
    ['---', '---'],
  ])('%s is "%s"', (id, name) => {
    expect(displayNameOf(id)).toBe(name);
  });
});
