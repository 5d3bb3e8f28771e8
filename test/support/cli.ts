import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { AppDeps } from '../../api/app';
import { startApiEngine, stopApiEngine } from './api-engine';
import type { Engine, EngineOptions } from './engine';
import { testStack } from './stack-env';

const ROOT = path.join(__dirname, '..', '..');
const BIN = path.join(ROOT, 'cli', 'agent-engine.js');
const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

export interface CliRun { code: number | null; stdout: string; stderr: string; screen: string }

export interface Cli {
  /**
   * everything the CLI wrote (stdout and stderr), as a terminal would show it; and each stream
   * apart (in a terminal, both are the terminal's: all of it is in stdout)
   */
  out: { screen: string; stdout: string; stderr: string };
  /** the CLI's exit code */
  done: Promise<number | null>;
  /** the CLI's exit code with what it wrote, once it has exited */
  ended: Promise<CliRun>;
  /** keystrokes on a terminal (\x03 is Ctrl-C), or text on stdin */
  type: (keys: string) => void;
  child: ChildProcess;
}

/**
 * The CLI as a person runs it against `apiUrl`: in a pseudo-terminal when `terminal` is set, else
 * with pipes. `script` (util-linux) gives it a terminal for stdin, stdout and stderr, forwards what
 * the test writes as keystrokes, and with -e exits with the CLI's exit code. The command is `exec`ed:
 * script runs it through $SHELL (or /bin/sh) -c, and dash does not replace itself with a lone
 * command, so it would stay in the terminal's foreground group, receive the Ctrl-C too and, once the
 * CLI has exited, kill itself with SIGINT: script would then report 130, not the CLI's code.
 */
export function runCli(args: string[], apiUrl: string, { terminal }: { terminal: boolean }): Cli {
  const env = { ...process.env, API_URL: apiUrl, API_KEY: '', TERM: 'xterm' };
  const child = terminal
    ? spawn('script', ['-qefc', `exec ${[process.execPath, BIN, ...args].map(quote).join(' ')}`, '/dev/null'], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] })
    : spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
  const out = { screen: '', stdout: '', stderr: '' };
  child.stdout!.on('data', (d: Buffer) => { out.screen += d.toString(); out.stdout += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { out.screen += d.toString(); out.stderr += d.toString(); });
  const done = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code));
  });
  const ended = done.then((code) => ({ code, ...out }));
  // A CLI that failed to start rejects `done`; `ended` says the same to whoever awaits it.
  ended.catch(() => undefined);
  return { type: (keys) => { child.stdin!.write(keys); }, out, done, ended, child };
}

/** An engine with its worker, the API on it listening on 127.0.0.1, and CLIs run against that API. */
export interface CliEngine {
  engine: Engine;
  app: FastifyInstance;
  /** the API's address */
  url: string;
  /** the CLI against the API (or `apiUrl`), with pipes unless `terminal`; killed at the end if still running */
  cli(args: string[], options?: { terminal?: boolean; apiUrl?: string }): Cli;
}

/**
 * What the CLI tests run against. Call inside a describe: it registers the beforeAll that starts the
 * engine and its API and the afterAll that stops them, and the CLIs still running with them.
 * `engine`, `app` and `url` are set once beforeAll has run.
 */
export function withCliEngine(options: { app?: Partial<AppDeps>; engine?: EngineOptions } = {}): CliEngine {
  const started: Cli[] = [];
  const h: CliEngine = {
    engine: undefined as unknown as Engine,
    app: undefined as unknown as FastifyInstance,
    url: '',
    cli(args, { terminal = false, apiUrl = h.url } = {}) {
      const cli = runCli(args, apiUrl, { terminal });
      started.push(cli);
      return cli;
    },
  };
  beforeAll(async () => {
    ({ engine: h.engine, app: h.app } = await startApiEngine('embedded', options.app, options.engine));
    h.url = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    for (const cli of started) if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill();
    await Promise.all(started.map((cli) => cli.done.catch(() => undefined)));
    await stopApiEngine(h);
  });
  return h;
}

/** `agent-engine mcp` as an MCP client launches it, against the test stack's engine on `taskQueue`. */
export function mcpStdioTransport(taskQueue: string): StdioClientTransport {
  return new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp'],
    env: {
      PATH: process.env.PATH ?? '', DATABASE_URL: testStack().databases.embedded, TEMPORAL_ADDRESS: testStack().temporalAddress,
      TASK_QUEUE: taskQueue, LOG_LEVEL: 'warn',
    },
    stderr: 'inherit',
  });
}
