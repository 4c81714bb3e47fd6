import { Command } from 'commander';
import { openApiDocument, renderReference } from '../api/index.js';
import { print, printJson } from './output.js';

export function openapiCommand(): Command {
  return new Command('openapi')
    .description('Print the OpenAPI 3.1 document of the HTTP API (the one served at GET /v1/openapi.json)')
    .option('--markdown', 'print the API reference rendered as Markdown instead')
    .action((options: { markdown?: boolean }) =>
      options.markdown ? print(renderReference(openApiDocument()).trimEnd()) : printJson(openApiDocument()),
    );
}
