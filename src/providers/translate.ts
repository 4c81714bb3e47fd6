/** Helpers for adapters that translate OpenAI's shapes into another wire format and back. */
import { isObject } from '../wire/index.js';
import { UpstreamError } from './provider.js';
import type { ContentPart, ImagePart } from './types.js';

/** Reads `data:image/png;base64,....` into its media type and base64 data; undefined for other URLs. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1]!, data: match[2]! } : undefined;
}

/** Media type from a URL's file extension (providers that fetch images by URL want one). */
export function mediaTypeOf(url: string): string {
  const ext = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
  return ext === 'png' ? 'image/png' : ext === 'gif' ? 'image/gif' : ext === 'webp' ? 'image/webp' : 'image/jpeg';
}

/** The text of a message's content: the string, or its text parts joined (other parts are left out). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (isObject(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .join('');
}

/** Validation lets no other part type be called `image_url`. */
export const isImagePart = (part: ContentPart): part is ImagePart => part.type === 'image_url';

/** A request the adapter cannot express in the provider's format: the client's 400, never retried. */
export function unsupported(provider: string, message: string, param: string | null = null): UpstreamError {
  return new UpstreamError(provider, 'http', message, { status: 400, param });
}
