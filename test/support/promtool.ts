import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Prometheus' promtool, which checks scrapes, rules and configurations as Prometheus reads them:
 * built from github.com/prometheus/prometheus/cmd/promtool (.ci/run builds and caches it).
 */

export const PROMTOOL_VERSION = '0.316.0';

/** Where .ci/run caches it; PROMTOOL_PATH overrides. */
export function promtoolPath(): string {
  const cache = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
  return process.env.PROMTOOL_PATH ?? path.join(cache, 'durable-agent-engine', `promtool-v${PROMTOOL_VERSION}`, 'promtool');
}

/**
 * Tests that need promtool: skipped with a message where it is not built, but never under CI,
 * where .ci/run builds it and a missing promtool must fail.
 */
export function promtoolDescribe(name: string, fn: () => void): void {
  const runs = fs.existsSync(promtoolPath()) || Boolean(process.env.CI);
  if (!runs) {
    process.stderr.write(`Skipping "${name}": no promtool at ${promtoolPath()} (.ci/run builds it, or set PROMTOOL_PATH; see docs/development.md).\n`);
  }
  // An intended, conditional skip (the guide's rule for tests that need an extra install), not one left in.
  (runs ? describe : describe.skip)(name, fn);
}

export interface PromtoolResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs promtool with `args`, `stdin` piped in when given; resolves whatever its exit code. */
export function promtool(args: string[], options: { stdin?: string; cwd?: string } = {}): Promise<PromtoolResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(promtoolPath(), args, { cwd: options.cwd, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      if (typeof code !== 'number') return reject(err ?? new Error('promtool gave no exit code'));
      resolve({ code, stdout, stderr });
    });
    child.stdin?.end(options.stdin ?? '');
  });
}
