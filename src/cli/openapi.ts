/** What `tollgate openapi` does (the command and its options are in program.ts). */
import { openApiDocument, renderReference } from '../api/index.js';
import { print, printJson } from './output.js';

export interface OpenApiOptions {
  markdown?: boolean;
}

export function printOpenApi(options: OpenApiOptions): void {
  if (options.markdown) print(renderReference(openApiDocument()).trimEnd());
  else printJson(openApiDocument());
}
