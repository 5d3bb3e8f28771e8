import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../support/processes';
import { testStack } from '../support/stack-env';

interface Ran { code: number; stdout: string; stderr: string }

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

describe('installing', () => {
  test('package-lock.json lists the native packages of every platform, so npm ci accepts it as it is', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'engine-lock-'));
    try {
      await fs.copyFile(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
      await fs.copyFile(path.join(ROOT, 'package-lock.json'), path.join(dir, 'package-lock.json'));
      // Offline and without scripts: npm checks the lock against package.json before it fetches anything.
      const ci = await run('npm', ['ci', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir });
      expect(ci.stderr).not.toMatch(/Missing: |in sync/);
      expect(ci.code).toBe(0);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

/**
 * What `npm run build` produces, run as the production image runs it: with node, and with the
 * packages of `npm ci --omit=dev` only (the preload refuses the others).
 */
describe('the build, with production dependencies only', () => {
  const PRELOAD = path.join(ROOT, 'test', 'support', 'only-production-dependencies.js');
  let out: string;
  const production = (args: string[], env: NodeJS.ProcessEnv = {}) => {
    const { DATABASE_URL: _ignored, ...rest } = process.env;
    return run(process.execPath, ['--require', PRELOAD, ...args], { env: { ...rest, LOG_LEVEL: 'warn', ...env } });
  };

  beforeAll(async () => {
    out = path.join(testStack().tmpDir, 'build');
    // Type errors are the lint's business (tsc --noEmit); this checks that the output runs.
    const tsc = await run(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--noCheck', '--outDir', path.join(out, 'dist')]);
    expect(tsc.stdout + tsc.stderr).toBe('');
    // The bin stays where package.json names it, beside the build it falls back to.
    await fs.mkdir(path.join(out, 'cli'), { recursive: true });
    await fs.copyFile(path.join(ROOT, 'cli', 'agent-engine.js'), path.join(out, 'cli', 'agent-engine.js'));
  });
  afterAll(() => fs.rm(out, { recursive: true, force: true }));

  test('the preload refuses a devDependency, and not a production package\'s own nested copy', async () => {
    const dev = await production(['-e', "require('@modelcontextprotocol/server-legacy/sse')"]);
    expect(dev.stderr).toContain('a devDependency, absent after npm ci --omit=dev');
    // iconv-lite's top-level copy is dev-only; source-map-loader (the worker's bundler) has its own.
    const nested = await production(['-e', "require(require.resolve('iconv-lite', { paths: [require.resolve('source-map-loader')] }))"]);
    expect(nested.stderr).toBe('');
    expect(nested.code).toBe(0);
  });

  test('the worker and the API load every module they need, then ask for DATABASE_URL', async () => {
    const [worker, api] = await Promise.all([
      production([path.join(out, 'dist', 'worker', 'main.js')]),
      production([path.join(out, 'dist', 'api', 'server.js')]),
    ]);
    expect(worker.stderr).toContain('DATABASE_URL is required for a stand-alone worker');
    expect(worker.code).toBe(1);
    expect(api.stderr).toContain('DATABASE_URL is required for a stand-alone API');
    expect(api.code).toBe(1);
  });

  test('the workflow bundle builds from the compiled workflows', async () => {
    const bundle = path.join(out, 'workflow-bundle.js');
    const built = await production([path.join(out, 'dist', 'worker', 'bundle-workflows.js'), bundle]);
    expect(built.stderr).toBe('');
    expect(built.code).toBe(0);
    const code = await fs.readFile(bundle, 'utf8');
    expect(code).toContain('runWorkflow');
    // Workflow code is built from pure declarations only: no database driver, MCP client or sockets in it.
    expect(code).not.toMatch(/node_modules\/(pg|pg-protocol|pg-copy-streams)\//);
    expect(code).not.toContain('@modelcontextprotocol');
    expect(code).not.toMatch(/["']node:net["']|require\(["']net["']\)/);
    // Nor zod: every workflow evaluates its bundle's modules when it starts (npm run bench:replay).
    expect(code).toContain('native-tool-kinds');
    expect(code).not.toMatch(/node_modules\/zod\//);
  });

  test('agent-engine runs the build when tsx is not installed', async () => {
    const help = await production([path.join(out, 'cli', 'agent-engine.js'), '--help']);
    expect(help.stderr).toBe('');
    expect(help.stdout).toContain('usage:\n  agent-engine run --agent');
    expect(help.code).toBe(0);
  });
});
