/** What `tollgate config …` does (the commands and their options are in program.ts). */
import { loadConfig } from '../config/index.js';
import { editorSchema } from '../config/editor-schema.js';
import { print, printJson, type JsonOption } from './output.js';

export function checkConfig(options: JsonOption): void {
  const loaded = loadConfig();
  if (options.json) return printJson(hideSecrets({ ...loaded, models: loaded.models.map((m) => m.id) }));
  print(
    `The configuration is valid: ${loaded.models.length} models, ${Object.keys(loaded.providers).length} providers configured.`,
  );
}

export function printConfigSchema(): void {
  printJson(editorSchema());
}

/** A copy of `value` for printing, with secrets masked and passwords taken out of URLs. */
function hideSecrets(value: object): unknown {
  const hide = (key: string, item: unknown): unknown => {
    if (typeof item !== 'string') return item;
    if (/(token|secret|api_key)$/.test(key)) return '***';
    return key.endsWith('_url') ? item.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@') : item;
  };
  return JSON.parse(JSON.stringify(value, hide));
}
