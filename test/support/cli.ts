import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { testStack } from './stack-env';

const ROOT = path.join(__dirname, '..', '..');
const BIN = path.join(ROOT, 'cli', 'agent-engine.js');
const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

export interface Cli {
  /** everything the CLI wrote (stdout and stderr), as a terminal would show it */
  out: { screen: string };
  /** the CLI's exit code */
  done: Promise<number | null>;
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
  const out = { screen: '' };
  child.stdout!.on('data', (d: Buffer) => { out.screen += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { out.screen += d.toString(); });
  const done = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code));
  });
  return { type: (keys) => { child.stdin!.write(keys); }, out, done, child };
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
