/** What `tollgate models` does (the command and its options are in program.ts). */
import { Catalog, renderModel } from '../catalog/index.js';
import { loadConfig } from '../config/index.js';
import { parseUsd } from '../money/index.js';
import { money, print, printJson, printTable, type JsonOption } from './output.js';

/** The performance block of a model that has not served traffic (the CLI sees none). */
const NO_TRAFFIC = { avg_response_time: null, avg_tokens_per_second: null, uptime_percentage: null };

export interface ListModelsOptions extends JsonOption {
  active?: boolean;
}

export function listModels(options: ListModelsOptions): void {
  const models = new Catalog(loadConfig()).list({ activeOnly: Boolean(options.active) });
  if (options.json) return printJson({ object: 'list', data: models.map((m) => renderModel(m, NO_TRAFFIC, true)) });
  printTable(
    ['MODEL', 'PROVIDER', 'PROMPT/1K', 'COMPLETION/1K', 'CONTEXT', 'STATUS'],
    models.map((m) => [
      m.id,
      m.providerName,
      money(parseUsd(m.pricingUsd.prompt)),
      money(parseUsd(m.pricingUsd.completion)),
      m.contextLength.toLocaleString('en-US'),
      m.active ? 'active' : `inactive: ${m.statusMessage}`,
    ]),
  );
  const inactive = models.filter((m) => !m.active).length;
  if (inactive) print('', `${inactive} of ${models.length} models are inactive until their provider is configured.`);
}
