/** The payments settings: Stripe from the environment (or the YAML file), purchase bounds checked at start-up. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-payments-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function yaml(text: string): string {
  const file = join(dir, `${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return file;
}

describe('payments configuration', () => {
  it('is off by default, with purchases of 5 to 1,000 USD, pending ones asked of Stripe after 5 minutes', () => {
    const config = loadConfig({ env: {}, file: yaml('{}') });
    expect(config.payments).toEqual({
      stripe: {},
      purchase: {
        min_amount: 5,
        max_amount: 1000,
        pending_check_after_seconds: 300,
        pending_check_interval_seconds: 60,
      },
    });
  });

  it('takes Stripe from STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET and STRIPE_API_BASE, over the file', () => {
    const file = yaml('payments:\n  stripe:\n    secret_key: sk_test_file\n  purchase:\n    min_amount: 10\n');
    const config = loadConfig({
      env: {
        STRIPE_SECRET_KEY: 'sk_test_env',
        STRIPE_WEBHOOK_SECRET: 'whsec_env',
        STRIPE_API_BASE: 'http://127.0.0.1:12111',
      },
      file,
    });
    expect(config.payments).toEqual({
      stripe: { secret_key: 'sk_test_env', webhook_secret: 'whsec_env', api_base: 'http://127.0.0.1:12111' },
      purchase: {
        min_amount: 10,
        max_amount: 1000,
        pending_check_after_seconds: 300,
        pending_check_interval_seconds: 60,
      },
    });
  });

  it('refuses bounds that are not whole cents, below Stripe minimum or the wrong way round, naming the field', () => {
    expect(() => loadConfig({ env: {}, file: yaml('payments:\n  purchase:\n    min_amount: 5.001\n') })).toThrow(
      /payments\.purchase\.min_amount: whole cents/,
    );
    expect(() => loadConfig({ env: {}, file: yaml('payments:\n  purchase:\n    min_amount: 0.1\n') })).toThrow(
      /payments\/purchase\/min_amount|payments\.purchase\.min_amount/,
    );
    expect(() =>
      loadConfig({ env: {}, file: yaml('payments:\n  purchase:\n    min_amount: 50\n    max_amount: 20\n') }),
    ).toThrow(/min_amount: larger than max_amount/);
    expect(() => loadConfig({ env: { STRIPE_API_BASE: 'stripe.test' }, file: yaml('{}') })).toThrow(
      /payments\.stripe\.api_base/,
    );
  });
});
