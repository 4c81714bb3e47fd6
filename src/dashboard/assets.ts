/**
 * The built single-page app (`npm run build` bundles web/ into dist/web/). Files are read once at start-up;
 * hashed asset names are cached for a year, the HTML shell never.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { GatewayError } from '../errors/index.js';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.map': 'application/json',
};

/** Same-origin only: no inline script or style, no framing. */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  body: Buffer;
  type: string;
}

export interface Bundle {
  html: Buffer;
  assets: Map<string, Asset>;
}

/** dist/web next to dist/dashboard when running the build; dist/web from the sources when running under tsx. */
export function loadBundle(): Bundle | undefined {
  const candidates = [new URL('../web/', import.meta.url), new URL('../../dist/web/', import.meta.url)].map((url) =>
    fileURLToPath(url),
  );
  const dir = candidates.find((candidate) => existsSync(`${candidate}index.html`));
  if (!dir) return undefined;
  const assets = new Map<string, Asset>();
  if (existsSync(`${dir}assets`)) {
    for (const name of readdirSync(`${dir}assets`)) {
      assets.set(name, {
        body: readFileSync(`${dir}assets/${name}`),
        type: TYPES[extname(name)] ?? 'application/octet-stream',
      });
    }
  }
  return { html: readFileSync(`${dir}index.html`), assets };
}

function securityHeaders(reply: FastifyReply): FastifyReply {
  return reply.headers({
    'content-security-policy': CSP,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
  });
}

export function assetRoutes(scope: FastifyInstance, bundle: Bundle | undefined): void {
  const page = async (_request: unknown, reply: FastifyReply) => {
    if (!bundle)
      throw new GatewayError('service_unavailable', {
        message: 'The dashboard has not been built; run `npm run build`',
      });
    return securityHeaders(reply)
      .header('cache-control', 'no-cache')
      .type('text/html; charset=utf-8')
      .send(bundle.html);
  };

  scope.get<{ Params: { file: string } }>('/assets/:file', async (request, reply) => {
    const asset = bundle?.assets.get(request.params.file);
    if (!asset) throw new GatewayError('not_found', { message: 'No such dashboard asset' });
    return securityHeaders(reply)
      .header('cache-control', 'public, max-age=31536000, immutable')
      .type(asset.type)
      .send(asset.body);
  });
  scope.all('/api/*', (request) =>
    Promise.reject(
      new GatewayError('not_found', { message: `Unknown route: ${request.method} ${request.url.split('?')[0]}` }),
    ),
  );
  // The app routes in the browser (/dashboard/keys, /dashboard/usage, ...): every page is the same shell.
  scope.get('/', page);
  scope.get('/*', page);
}
