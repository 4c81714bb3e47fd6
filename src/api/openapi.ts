/**
 * The OpenAPI 3.1 document of tollgate's HTTP API, served at GET /v1/openapi.json. It is assembled from the
 * schemas that validate requests (chat, webhooks, admin) and the response schemas of ./schemas.ts: no copy is
 * kept by hand. Schemas with an `$id` become components and are referenced wherever they are nested. The paths of
 * each area are in ./openapi-*-paths.ts and ./openapi-paths.ts, built with ./openapi-builder.ts.
 */
import { VERSION } from '../config/index.js';
import { ChatRequestSchema, CompletionRequestSchema, EmbeddingRequestSchema } from '../wire/index.js';
import { adminPaths } from './openapi-admin-paths.js';
import { auditPaths } from './openapi-audit-paths.js';
import { plain, type Json } from './openapi-builder.js';
import { keyPaths } from './openapi-key-paths.js';
import { chatPaths, creditPaths, operationsPaths } from './openapi-paths.js';
import { usagePaths } from './openapi-usage-paths.js';
import { webhookPaths } from './openapi-webhook-paths.js';
import { RESPONSE_SCHEMAS } from './schemas.js';

export function openApiDocument(): Json {
  const schemas: Json = {};
  for (const schema of RESPONSE_SCHEMAS) schemas[schema.$id!] = plain(schema, true);
  schemas.ChatRequest = plain(ChatRequestSchema, true);
  schemas.EmbeddingRequest = plain(EmbeddingRequestSchema, true);
  schemas.CompletionRequest = plain(CompletionRequestSchema, true);
  return {
    openapi: '3.1.0',
    info: {
      title: 'tollgate',
      version: VERSION,
      description:
        'OpenAI-compatible LLM gateway paid from prepaid USD credit balances. Amounts are USD numbers with at most 9 decimals; ' +
        '`created`-style fields are Unix seconds. Every response carries `x-request-id`.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/', description: 'This gateway' }],
    security: [{ apiKey: [] }],
    tags: [
      { name: 'chat' },
      { name: 'completions' },
      { name: 'embeddings' },
      { name: 'responses' },
      { name: 'messages', description: "Anthropic's Messages API, with Anthropic's error envelope" },
      { name: 'models' },
      { name: 'credits' },
      { name: 'usage', description: 'What each request cost: one request explained, usage exports, the calling key' },
      { name: 'webhooks' },
      { name: 'keys', description: "The account's keys, managed by its `management` and `full` keys" },
      { name: 'audit', description: 'Who changed what in the account: the audit log' },
      { name: 'operations' },
      { name: 'admin' },
    ],
    paths: {
      ...chatPaths(),
      ...creditPaths(),
      ...usagePaths(),
      ...webhookPaths(),
      ...keyPaths(),
      ...auditPaths(),
      ...operationsPaths(),
      ...adminPaths(),
    },
    components: {
      schemas,
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'A `tg-live-...` or `tg-test-...` key' },
        adminToken: { type: 'http', scheme: 'bearer', description: 'TOLLGATE_ADMIN_TOKEN' },
      },
    },
  };
}
