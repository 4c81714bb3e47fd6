/**
 * `npm run bench:profile [-- --postgres] [--seconds 10] [--connections 50] [--top 30]`: tollgate under `node
 * --cpu-prof` behind the bench's mock upstream, loaded at 50 connections (wrk, or autocannon), then the profile's
 * self time summed by package or source folder and by function. The figures for docs/performance.md come from here.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { runLoad, wrkInstalled } from './lib/load.js';
import {
  BENCH_DIR,
  baseEnv,
  cleanupAll,
  compileServer,
  portMessage,
  readProc,
  startServer,
  startTollgate,
  tempDir,
} from './lib/processes.js';
import { createDatabase, prepareAccount, REDIS_URL } from './lib/setup.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
}

const { values: args } = parseArgs({
  options: {
    postgres: { type: 'boolean', default: false },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    top: { type: 'string', default: '30' },
  },
});

async function main(): Promise<void> {
  const dir = tempDir('tollgate-profile-');
  const database = args.postgres ? await createDatabase() : undefined;
  const mock = await startServer({
    name: 'mock upstream',
    args: [compileServer('mock-upstream')],
    env: { ...baseEnv(), MOCK_CHUNKS: '50', MOCK_DELAY_MS: '0' },
    cwd: dir,
    logFile: join(dir, 'mock.log'),
    ipc: true,
    ready: portMessage,
  });
  const adminToken = randomBytes(24).toString('hex');
  const profileDir = join(dir, 'profile');
  const tollgate = await startTollgate({
    dir,
    upstream: mock.url,
    adminToken,
    nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profileDir],
    ...(database ? { backends: { databaseUrl: database.url, redisUrl: REDIS_URL } } : {}),
  });
  const account = await prepareAccount(tollgate.url, adminToken);
  const body = JSON.stringify({
    model: account.model,
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Say hello.' }],
  });
  const endpoint = { url: `${tollgate.url}/v1/chat/completions`, auth: account.apiKey, body };
  const tool = wrkInstalled() ? 'wrk' : 'autocannon';
  await runLoad(tool, endpoint, Number(args.connections), 2);
  const before = readProc(tollgate.pid).cpuSeconds;
  const load = await runLoad(tool, endpoint, Number(args.connections), Number(args.seconds));
  const cpuPer1k = ((readProc(tollgate.pid).cpuSeconds - before) / load.requests) * 1000;
  await tollgate.stop();
  const setup = database ? 'postgres + redis' : 'embedded';
  console.log(
    `${tool}: ${Math.round(load.rps)} req/s at ${args.connections} connections, ${cpuPer1k.toFixed(3)} CPU s/1k req (profiler included), ${load.errors} errors (${setup})`,
  );
  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error('tollgate wrote no .cpuprofile');
  // Kept for Chrome DevTools (Performance > Load profile) or a closer look; *.cpuprofile is git-ignored.
  const kept = join(BENCH_DIR, 'results', 'latest.cpuprofile');
  mkdirSync(dirname(kept), { recursive: true });
  copyFileSync(join(profileDir, file), kept);
  summarize(JSON.parse(readFileSync(kept, 'utf8')) as CpuProfile, Number(args.top));
  console.log(`\nprofile: ${relative(process.cwd(), kept)}`);
}

/** Where a frame's code lives: a package under node_modules, a folder of dist/, node's internals, or V8's own. */
function areaOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const own = /\/dist\/([^/]+)\//.exec(url);
  if (own) return `tollgate/${own[1]}`;
  if (url.startsWith('node:'))
    return url
      .replace(/^node:(internal\/)?/, 'node:')
      .split('/')
      .slice(0, 2)
      .join('/');
  return url;
}

function summarize(profile: CpuProfile, top: number): void {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const hits = new Map<number, number>();
  for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  const total = profile.samples.length;
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, count] of hits) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const area = areaOf(url, functionName);
    areas.set(area, (areas.get(area) ?? 0) + count);
    const name = `${functionName || '(anonymous)'} ${area}${url ? `:${lineNumber + 1}` : ''}`;
    functions.set(name, (functions.get(name) ?? 0) + count);
  }
  const print = (title: string, counts: Map<string, number>) => {
    console.log(`\n${title} (self time, ${total} samples)`);
    for (const [name, count] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(`${((100 * count) / total).toFixed(1).padStart(6)} %  ${name}`);
    }
  };
  print('by area', areas);
  print('by function', functions);
}

main()
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => cleanupAll());
