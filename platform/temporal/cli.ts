import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from '../logger';
import { toolsDir } from '../paths';

const exec = promisify(execFile);

export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';
const MIN_GO = [1, 25];

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function onPath(name: string, extraDirs: string[] = []): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), ...extraDirs].filter(Boolean);
  return dirs.map((d) => path.join(d, name)).find(isExecutable);
}

async function goVersion(go: string): Promise<number[] | undefined> {
  try {
    const { stdout } = await exec(go, ['env', 'GOVERSION']);
    const m = /go(\d+)\.(\d+)/.exec(stdout);
    return m ? [Number(m[1]), Number(m[2])] : undefined;
  } catch {
    return undefined;
  }
}

const HOW_TO_GET_IT = `Install the Temporal CLI (https://docs.temporal.io/cli) and put "temporal" on PATH, set TEMPORAL_CLI_PATH,
or install Go >= ${MIN_GO.join('.')} so that it can be built once with: go install ${TEMPORAL_CLI_MODULE}`;

/**
 * Finds the Temporal CLI: TEMPORAL_CLI_PATH, then `temporal` on PATH, then the tools dir,
 * then a one-time `go install` into the tools dir.
 */
export async function resolveTemporalCli(
  options: { cliPath?: string; logger?: Logger; build?: boolean; onBuild?: (message: string) => void; signal?: AbortSignal } = {},
): Promise<string> {
  if (options.cliPath) {
    if (!isExecutable(options.cliPath)) {
      throw new Error(`TEMPORAL_CLI_PATH=${options.cliPath} is not an executable file.\n${HOW_TO_GET_IT}`);
    }
    return options.cliPath;
  }
  const fromPath = onPath('temporal');
  if (fromPath) return fromPath;
  const binDir = path.join(toolsDir(), 'bin');
  const cached = path.join(binDir, 'temporal');
  if (isExecutable(cached)) return cached;
  if (options.build === false) throw new Error(`The Temporal CLI was not found.\n${HOW_TO_GET_IT}`);

  const go = onPath('go', ['/usr/local/go/bin', path.join(process.env.HOME ?? '', 'go', 'bin')]);
  const version = go && (await goVersion(go));
  if (!go || !version || version[0] < MIN_GO[0] || (version[0] === MIN_GO[0] && version[1] < MIN_GO[1])) {
    throw new Error(`The Temporal CLI was not found${go ? `, and ${go} is older than Go ${MIN_GO.join('.')}` : ''}.\n${HOW_TO_GET_IT}`);
  }
  const building = `building the Temporal CLI once with "go install ${TEMPORAL_CLI_MODULE}" into ${binDir} (this takes a few minutes)`;
  if (options.onBuild) options.onBuild(building);
  else options.logger?.info(building);
  fs.mkdirSync(binDir, { recursive: true });
  try {
    await exec(go, ['install', TEMPORAL_CLI_MODULE], {
      env: { ...process.env, GOBIN: binDir, GOFLAGS: '-trimpath', CGO_ENABLED: '0' },
      maxBuffer: 64 * 1024 * 1024,
      // Ctrl-C during the build: npm start stops now, not minutes later.
      signal: options.signal,
    });
  } catch (err) {
    const said = (err as { stderr?: string }).stderr ?? (err as Error).message;
    throw new Error(`Building the Temporal CLI failed: ${said}\n${HOW_TO_GET_IT}`, { cause: err });
  }
  if (!isExecutable(cached)) throw new Error(`go install finished but ${cached} is missing.\n${HOW_TO_GET_IT}`);
  return cached;
}
