// Bundles the dashboard (web/) into dist/web: hashed, minified assets and the HTML shell that names them.
// Runs as part of `npm run build`; no network, no CDN. Importable for tests: `await buildDashboard()`.
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export async function buildDashboard({ outDir: finalDir = join(root, 'dist', 'web') } = {}) {
  // Built beside the bundle in use and swapped in at the end: a running gateway never reads a half-written one.
  const outDir = `${finalDir}.${process.pid}-${Date.now()}`;
  const result = await build({
    absWorkingDir: root,
    entryPoints: { app: 'web/src/main.ts', styles: 'web/styles.css' },
    outdir: join(outDir, 'assets'),
    entryNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    sourcemap: 'linked',
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
    metafile: true,
    logLevel: 'warning',
  });
  const names = {};
  for (const [file, output] of Object.entries(result.metafile.outputs)) {
    if (output.entryPoint && !file.endsWith('.map'))
      names[output.entryPoint] = relative(join(outDir, 'assets'), join(root, file));
  }
  const template = await readFile(join(root, 'web', 'index.html'), 'utf8');
  const html = template
    .replace('%APP_JS%', `/dashboard/assets/${names['web/src/main.ts']}`)
    .replace('%APP_CSS%', `/dashboard/assets/${names['web/styles.css']}`);
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, 'index.html'), html);
  const old = `${outDir}.old`;
  await rename(finalDir, old).catch(() => undefined);
  // A build running at the same time may have put its bundle in place first: that one stays.
  await rename(outDir, finalDir).catch(() => rm(outDir, { recursive: true, force: true }));
  await rm(old, { recursive: true, force: true });
  return finalDir;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await buildDashboard();
}
