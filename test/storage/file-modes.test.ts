/** The data directory and the SQLite files hold key hashes and balances: only tollgate's own user may read them. */
import { chmodSync, existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';

const modeOf = (path: string) => statSync(path).mode & 0o777;
let gateway: TestGateway | undefined;
const parents: string[] = [];
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
  for (const parent of parents.splice(0)) rmSync(parent, { recursive: true, force: true });
});

/** A data directory that does not exist yet, in a fresh temporary directory. */
function newDataDir(): string {
  const parent = tempDir();
  parents.push(parent);
  return join(parent, 'data');
}

function expectPrivate(dataDir: string): void {
  expect(modeOf(dataDir).toString(8)).toBe('700');
  const db = join(dataDir, 'tollgate.db');
  const journal = join(dataDir, 'ledger.journal');
  for (const file of [db, `${db}-wal`, `${db}-shm`, journal, `${journal}.lock`]) {
    expect(existsSync(file), file).toBe(true);
    expect(modeOf(file).toString(8), file).toBe('600');
  }
}

describe('file modes', () => {
  it('a fresh start creates the data directory 0700 and the database files 0600', async () => {
    const dataDir = newDataDir();
    gateway = await startGateway({ env: { TOLLGATE_DATA_DIR: dataDir } });
    await gateway.account();
    expectPrivate(dataDir);
  });

  it('a start on files with looser modes tightens them', async () => {
    const dataDir = newDataDir();
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    const db = join(dataDir, 'tollgate.db');
    for (const file of [db, `${db}-wal`, `${db}-shm`, join(dataDir, 'ledger.journal.lock')]) {
      writeFileSync(file, '');
      chmodSync(file, 0o644);
    }
    gateway = await startGateway({ env: { TOLLGATE_DATA_DIR: dataDir } });
    await gateway.account();
    expectPrivate(dataDir);
  });
});
