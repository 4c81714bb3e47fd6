/** What a body exposes to the provider's bill beyond its text, in chat's, Messages' and Responses' shapes. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_SEARCH_BOUND, exposureOf, withSearchBounds } from '../../src/gateway/exposure.js';
import { GatewayError } from '../../src/errors/index.js';

describe('exposureOf', () => {
  it('a plain body exposes nothing', () => {
    expect(exposureOf({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] })).toEqual({
      unbounded: false,
      images: 0,
      webSearches: 0,
      serviceTier: undefined,
    });
  });

  it('content the provider fetches makes the prompt unbounded; inline text documents do not', () => {
    const part = (content: unknown) => exposureOf({ messages: [{ role: 'user', content: [content] }] }).unbounded;
    expect(part({ type: 'file', file: { file_id: 'file-1' } })).toBe(true);
    expect(part({ type: 'input_file', file_url: 'https://example.com/a.pdf' })).toBe(true);
    expect(part({ type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } })).toBe(true);
    expect(part({ type: 'document', source: { type: 'text', data: 'inline' } })).toBe(false);
    expect(exposureOf({ tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }] }).unbounded).toBe(true);
  });

  it('counts images in every protocol’s shape', () => {
    const content = [
      { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
      { type: 'input_image', image_url: 'https://example.com/b.png' },
      { type: 'image', source: { type: 'url', url: 'https://example.com/c.png' } },
    ];
    expect(exposureOf({ messages: [{ role: 'user', content }] }).images).toBe(3);
  });

  it('web searches at their bound, or the default bound a body without one is sent with', () => {
    expect(exposureOf({ tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }] })).toMatchObject({
      webSearches: 3,
      unbounded: true,
    });
    expect(exposureOf({ tools: [{ type: 'web_search' }], max_tool_calls: 2 }).webSearches).toBe(2);
    expect(exposureOf({ tools: [{ type: 'web_search' }] }).webSearches).toBe(DEFAULT_SEARCH_BOUND);
    expect(exposureOf({ web_search_options: { search_context_size: 'high' } }).webSearches).toBe(10);
  });

  it('refuses hosted tools tollgate cannot price, naming the tool', () => {
    const refused = () => exposureOf({ tools: [{ type: 'function' }, { type: 'code_interpreter' }] });
    expect(refused).toThrow(GatewayError);
    expect(refused).toThrow(expect.objectContaining({ param: 'tools[1].type' }));
  });

  it('the service tier asked for, unless it is the standard one', () => {
    expect(exposureOf({ service_tier: 'priority' }).serviceTier).toBe('priority');
    expect(exposureOf({ speed: 'fast' }).serviceTier).toBe('fast');
    expect(exposureOf({ service_tier: 'auto' }).serviceTier).toBeUndefined();
  });
});

describe('withSearchBounds', () => {
  it('sends the bound the hold took: max_uses on Anthropic’s tool, max_tool_calls on a Responses body', () => {
    const anthropic = withSearchBounds({ tools: [{ type: 'web_search_20250305', name: 'web_search' }] });
    expect(anthropic.tools).toEqual([
      { type: 'web_search_20250305', name: 'web_search', max_uses: DEFAULT_SEARCH_BOUND },
    ]);
    expect(anthropic).not.toHaveProperty('max_tool_calls');
    expect(withSearchBounds({ tools: [{ type: 'web_search' }] })).toMatchObject({
      max_tool_calls: DEFAULT_SEARCH_BOUND,
    });
    expect(withSearchBounds({ tools: [{ type: 'web_search' }], max_tool_calls: 2 })).toMatchObject({
      max_tool_calls: 2,
    });
    const plain = { tools: [{ type: 'function', name: 'f' }] };
    expect(withSearchBounds(plain)).toEqual(plain);
  });
});
