import { Command } from 'commander';
import { loadConfig } from '../config/index.js';
import { editorSchema } from '../config/editor-schema.js';
import { print, printJson } from './output.js';

export function configCommand(): Command {
  const config = new Command('config').description('Check the configuration, or print its JSON Schema for editors');
  config
    .command('check')
    .description(
      'Load and validate the configuration (defaults, tollgate.config.yaml, environment); print the problem if any',
    )
    .option('--json', 'print the merged configuration as JSON (secrets hidden)')
    .action((options: { json?: boolean }) => {
      const loaded = loadConfig();
      if (options.json) return printJson({ ...hideSecrets(loaded), models: loaded.models.map((m) => m.id) });
      print(
        `The configuration is valid: ${loaded.models.length} models, ${Object.keys(loaded.providers).length} providers configured.`,
      );
    });
  config
    .command('schema')
    .description('Print the JSON Schema of tollgate.config.yaml (for yaml-language-server and editors)')
    .action(() => printJson(editorSchema()));
  return config;
}

function hideSecrets<T>(value: T): T {
  const hide = (key: string, item: unknown): unknown => {
    if (typeof item !== 'string') return item;
    if (/(token|secret|api_key)$/.test(key)) return '***';
    return key.endsWith('_url') ? item.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@') : item;
  };
  return JSON.parse(JSON.stringify(value, hide)) as T;
}
