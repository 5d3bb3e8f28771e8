import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { build, stop } from 'esbuild';
import { CONSOLE_FILES } from './files';

/**
 * Builds the console (console/src) into console/dist: index.html, app.js and app.css, plus a
 * stamp of what they were built from. `npm run build` runs it; `npm start` runs it when the
 * build is missing or its stamp differs. The build goes to a temporary sibling folder first and is
 * renamed into place, so an API never serves half a build.
 */

const STAMP_FILE = 'stamp';

/** console/ of the repository, whether this runs from sources (tsx) or from dist/console/. */
export function consoleSourceDir(from = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'console', 'src', 'main.tsx'))) return path.join(dir, 'console');
    if (path.basename(dir) === 'console' && existsSync(path.join(dir, 'src', 'main.tsx'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`console/src not found above ${from}`);
  }
}

/** A hash of everything the build reads: the page's sources and this script's source. */
export function sourceStamp(consoleDir: string): string {
  const hash = createHash('sha256');
  const src = path.join(consoleDir, 'src');
  for (const name of readdirSync(src).sort()) {
    hash.update(`${name}\0`).update(readFileSync(path.join(src, name))).update('\0');
  }
  hash.update(readFileSync(path.join(consoleDir, 'build.ts')));
  return hash.digest('hex');
}

/** Whether console/dist is missing, incomplete, or built from other sources than these. */
export async function consoleIsStale(consoleDir: string): Promise<boolean> {
  const dist = path.join(consoleDir, 'dist');
  const stamp = await fs.readFile(path.join(dist, STAMP_FILE), 'utf8').catch(() => undefined);
  if (stamp !== sourceStamp(consoleDir)) return true;
  return !Object.keys(CONSOLE_FILES).every((file) => existsSync(path.join(dist, file)));
}

export async function buildConsole(consoleDir: string = consoleSourceDir()): Promise<void> {
  const src = path.join(consoleDir, 'src');
  const tmp = path.join(consoleDir, `.dist-${randomUUID()}`);
  await fs.mkdir(tmp);
  try {
    await build({
      entryPoints: [path.join(src, 'main.tsx')],
      outfile: path.join(tmp, 'app.js'),
      bundle: true, minify: true, format: 'iife', target: 'es2020', platform: 'browser',
      jsx: 'automatic', jsxImportSource: 'preact', legalComments: 'none', logLevel: 'silent',
      // The page is the API's: it needs no source map, and no absolute paths of this machine leak into it.
      sourcemap: false,
    });
    await fs.copyFile(path.join(src, 'index.html'), path.join(tmp, 'index.html'));
    await fs.copyFile(path.join(src, 'console.css'), path.join(tmp, 'app.css'));
    await fs.writeFile(path.join(tmp, STAMP_FILE), sourceStamp(consoleDir));
    await replaceDir(tmp, path.join(consoleDir, 'dist'));
  } finally {
    // esbuild's service process would otherwise outlive the build (and keep a test's process busy).
    await stop();
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

/**
 * A rename cannot replace a non-empty folder: the old build moves aside first, then goes. Two
 * builds at once (two test workers) may each find the other's build in place: it moves aside again.
 */
async function replaceDir(from: string, to: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const old = `${to}.old-${randomUUID()}`;
    const had = await fs.rename(to, old).then(() => true, (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return false;
      throw err;
    });
    try {
      await fs.rename(from, to);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (attempt >= 5 || (code !== 'ENOTEMPTY' && code !== 'EEXIST')) throw err;
    } finally {
      if (had) await fs.rm(old, { recursive: true, force: true });
    }
  }
}

if (require.main === module) {
  buildConsole().then(
    () => process.stdout.write('console built\n'),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
