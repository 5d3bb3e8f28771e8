import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { ConfigError } from '../platform/config';
import { serveStartFailure } from '../mcp-server/stdio-server';
import { openStdioEngine, serveEngineOverStdio, type StdioEngine } from './mcp-engine';
import { ApiError, createApiClient } from './api-client';
import {
  agentsListCommand, EXIT, integrationsImportCommand, runCommand, runsListCommand, runsShowCommand, UsageError, type CliContext,
} from './commands';
import { threadsListCommand, threadsShowCommand } from './thread-commands';
import { runsForkCommand } from './fork-command';
import { approvalsListCommand, decideCommand } from './approval-commands';
import { toolResultCommand } from './caller-tool-commands';
import { openInBrowser } from './browser';
import { integrationsAuthorizeCommand } from './integration-commands';
import { evalCommand } from './eval-commands';
import type { Output } from './progress';
import { escapeControls, terminalOutput } from './terminal-text';

const RUNS_LIST_USAGE = 'agent-engine runs list [--thread <id>] [--agent <name|id>] [--parent <run id>] '
  + '[--status running|completed|failed|cancelled] [--limit N] [--cursor C] [--json]';

const HELP = `agent-engine: start and follow agent runs through the engine's HTTP API

usage:
  agent-engine run --agent <name|id> "<input>" [--thread <id>] [--caller-tools <file.json>] [--follow] [--json]
  agent-engine run --thread <id> "<input>" [--follow] [--json]   the thread's own agent
  ${RUNS_LIST_USAGE}
  agent-engine runs show <run id> [--json]
  agent-engine runs fork <run id> --at <turn> [--agent <name|id>] [--follow] [--json]
                       a new run on a new thread, from the run's conversation up to the start of that turn
  agent-engine threads list [--agent <name|id>] [--limit N] [--cursor C] [--json]
  agent-engine threads show <thread id> [--json]
  agent-engine agents list [--json]
  agent-engine integrations import <mcp.json> [--json]
  agent-engine integrations authorize <name|id> [--json]   OAuth: prints the URL to open, waits for the callback
  agent-engine approvals list [--json]
  agent-engine eval <name> --runs <id,…> | --threads <id,…> [--agent <name|id> | --model '<json>']
                   [--tools recorded|live|recorded-then-live] [--expect '<json>'|@file] [--expect-by-run '<json>'|@file] [--json]
                       replays the runs (default --tools recorded), scores each, prints the table; exit 1 when one fails
  agent-engine approve <run id> <tool call id> [--reason "<note>"] [--json]
  agent-engine deny <run id> <tool call id> [--reason "<note>"] [--json]
  agent-engine tool-result <run id> <tool call id> "<result>" [--error] [--json]   answers a call of a caller tool
  agent-engine mcp     the agents as an MCP server on stdio: finds the engine \`npm start\` runs from DATA_DIR
                       (absolute, when an MCP client starts it), or uses DATABASE_URL and TEMPORAL_ADDRESS

options:
  --url <url>   the API (default: $API_URL, else http://127.0.0.1:3000); $AGENT_ENGINE_KEY, else $API_KEY, is sent as a bearer token
  --follow      show turns and tool calls live (on stderr), then the answer (on stdout)
  --json        print JSON instead of text

run --follow on a terminal asks about each tool call that waits for approval ([y/N]: anything but y
denies); without a terminal it prints the call and the command that decides it, and keeps following.
run --caller-tools declares the tools the caller runs ([{name, description, inputSchema}]); run --follow
prints each call of one with the command that answers it (agent-engine tool-result), and keeps following.
run without --thread creates a new thread for the agent; with --thread it runs the thread's own agent, or
with --agent another one, which sees the thread's messages (the thread stays its agent's). Ctrl-C asks
whether to cancel the run; when stdin is not a terminal, Ctrl-C cancels it without asking. Ctrl-C while
asked detaches.

exit codes: 0 ok; 1 the run failed or was cancelled (eval: a replay failed an expectation, or the eval did not
complete); 2 usage error; 3 API unreachable or HTTP error; 130 detached
`;

const OPTIONS = {
  url: { type: 'string' }, agent: { type: 'string' }, thread: { type: 'string' }, parent: { type: 'string' }, status: { type: 'string' },
  limit: { type: 'string' }, cursor: { type: 'string' }, follow: { type: 'boolean' }, json: { type: 'boolean' }, reason: { type: 'string' },
  'caller-tools': { type: 'string' }, error: { type: 'boolean' }, at: { type: 'string' },
  runs: { type: 'string' }, threads: { type: 'string' }, model: { type: 'string' }, tools: { type: 'string' }, expect: { type: 'string' },
  'expect-by-run': { type: 'string' }, help: { type: 'boolean', short: 'h' },
} as const;

/** Which options each command takes, so that a misplaced one is an error rather than ignored. */
const COMMANDS: Record<string, { options: string[]; positionals: number }> = {
  run: { options: ['agent', 'thread', 'follow', 'json', 'caller-tools'], positionals: 1 },
  'runs list': { options: ['thread', 'agent', 'parent', 'status', 'limit', 'cursor', 'json'], positionals: 0 },
  'runs show': { options: ['json'], positionals: 1 },
  'runs fork': { options: ['at', 'agent', 'follow', 'json'], positionals: 1 },
  'threads list': { options: ['agent', 'limit', 'cursor', 'json'], positionals: 0 },
  'threads show': { options: ['json'], positionals: 1 },
  'agents list': { options: ['json'], positionals: 0 },
  'integrations import': { options: ['json'], positionals: 1 },
  'integrations authorize': { options: ['json'], positionals: 1 },
  'approvals list': { options: ['json'], positionals: 0 },
  approve: { options: ['reason', 'json'], positionals: 2 },
  deny: { options: ['reason', 'json'], positionals: 2 },
  eval: { options: ['runs', 'threads', 'agent', 'model', 'tools', 'expect', 'expect-by-run', 'json'], positionals: 1 },
  'tool-result': { options: ['error', 'json'], positionals: 3 },
};
/** Commands of one word; the others are `<noun> <verb>`. */
const ONE_WORD = new Set(['run', 'approve', 'deny', 'tool-result', 'eval']);

type Values = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

function parse(argv: string[]): { command: string; args: string[]; values: Values } {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const values = parsed.values as Values;
  const [first = '', second = '', ...rest] = parsed.positionals;
  const command = ONE_WORD.has(first) ? first : `${first} ${second}`;
  const args = ONE_WORD.has(first) ? [second, ...rest].filter((a, i) => i > 0 || a !== '') : rest;
  if (values.help) return { command: 'help', args: [], values };
  const spec = COMMANDS[command];
  if (!spec) throw new UsageError(first ? `Unknown command "${command.trim()}"` : 'No command given');
  for (const name of Object.keys(values)) {
    if (name !== 'url' && !spec.options.includes(name)) {
      throw new UsageError(`--${name} does not apply to "${command}"`);
    }
  }
  if (args.length !== spec.positionals) {
    const hint = args.length > 1 ? ' (quote the input)' : '';
    throw new UsageError(`"${command}" takes ${spec.positionals} argument(s), got ${args.length}${hint}`);
  }
  if (command === 'run' && !values.agent && !values.thread) {
    throw new UsageError('run needs --agent <name|id>, or --thread <id> to use the thread\'s agent');
  }
  if (values.status && !['running', 'completed', 'failed', 'cancelled'].includes(values.status)) {
    throw new UsageError('--status must be running, completed, failed or cancelled');
  }
  if (values.limit && !/^\d+$/.test(values.limit)) throw new UsageError('--limit must be a number');
  if (command === 'runs fork' && !/^\d+$/.test(values.at ?? '')) throw new UsageError('runs fork needs --at <turn>, a turn number');
  return { command, args, values };
}

function dispatch(ctx: CliContext, command: string, args: string[], v: Values): Promise<number> {
  const json = v.json ?? false;
  switch (command) {
    case 'run': {
      const { agent, thread, follow } = v;
      return runCommand(ctx, { agent, input: args[0], thread, follow: follow ?? false, json, callerTools: v['caller-tools'] });
    }
    case 'runs list': {
      const { thread, agent, parent, status, limit, cursor } = v;
      return runsListCommand(ctx, { thread, agent, parent, status, limit, cursor, json });
    }
    case 'runs show': return runsShowCommand(ctx, { id: args[0], json });
    case 'runs fork': {
      return runsForkCommand(ctx, { runId: args[0], atTurn: Number(v.at), agent: v.agent, follow: v.follow ?? false, json });
    }
    case 'threads list': return threadsListCommand(ctx, { agent: v.agent, limit: v.limit, cursor: v.cursor, json });
    case 'threads show': return threadsShowCommand(ctx, { id: args[0], json });
    case 'agents list': return agentsListCommand(ctx, { json });
    case 'integrations import': return integrationsImportCommand(ctx, { file: args[0], json });
    case 'integrations authorize': return integrationsAuthorizeCommand(ctx, { integration: args[0], json });
    case 'approvals list': return approvalsListCommand(ctx, { json });
    case 'approve':
    case 'deny': return decideCommand(ctx, { decision: command, runId: args[0], toolCallId: args[1], reason: v.reason, json });
    case 'eval': {
      const { runs, threads, agent, model, tools, expect } = v;
      return evalCommand(ctx, { name: args[0], runs, threads, agent, model, tools, expect, expectByRun: v['expect-by-run'], json });
    }
    case 'tool-result': {
      const [runId, toolCallId, content] = args;
      return toolResultCommand(ctx, { runId, toolCallId, content, error: v.error ?? false, json });
    }
    default: throw new UsageError(`Unknown command "${command}"`);
  }
}

/**
 * `agent-engine mcp`. A person at a terminal gets the usual error and exit code when no engine can be
 * served. An MCP client that launched it (stdin a pipe) hides stderr, so the reason is also served to
 * it over the protocol until it lets go; the exit code then says the same.
 */
async function mcpCommand(stderr: Output, interactive: boolean): Promise<number> {
  let engine: StdioEngine;
  try {
    engine = await openStdioEngine();
  } catch (err) {
    if (interactive) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    stderr.write(`error: ${reason}\n`);
    await serveStartFailure(reason);
    return err instanceof ConfigError ? EXIT.usage : EXIT.api;
  }
  await serveEngineOverStdio(engine);
  return EXIT.ok;
}

/**
 * The composition root: the only place that reads the environment, argv and the terminal. All the
 * CLI prints goes through terminalOutput (or, for questions, escapeControls): control characters
 * from the LLM, tools and servers are escaped.
 */
export async function main(argv: string[]): Promise<number> {
  const stdout = terminalOutput(process.stdout);
  const stderr = terminalOutput(process.stderr);
  try {
    if (argv.length === 1 && argv[0] === 'mcp') return await mcpCommand(stderr, Boolean(process.stdin.isTTY));
    const { command, args, values } = parse(argv);
    if (command === 'help') {
      stdout.write(HELP);
      return EXIT.ok;
    }
    const ctx: CliContext = {
      api: createApiClient({
        baseUrl: values.url ?? process.env.API_URL ?? 'http://127.0.0.1:3000',
        apiKey: process.env.AGENT_ENGINE_KEY || process.env.API_KEY || undefined,
      }),
      out: stdout,
      err: stderr,
      interactive: Boolean(process.stdin.isTTY),
      ask: (question) => new Promise((resolve) => {
        const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
        rl.on('SIGINT', () => {
          rl.close();
          stderr.write('\n');
          resolve(null);
        });
        rl.question(escapeControls(question), (answer) => {
          rl.close();
          resolve(answer);
        });
      }),
      onInterrupt: (handler) => {
        process.on('SIGINT', handler);
        return () => process.off('SIGINT', handler);
      },
      readFile: (path) => readFile(path, 'utf8'),
      openUrl: openInBrowser,
    };
    return await dispatch(ctx, command, args, values);
  } catch (err) {
    if (err instanceof UsageError) {
      stderr.write(`error: ${err.message}\n\n${HELP}`);
      return EXIT.usage;
    }
    if (err instanceof ConfigError) {
      stderr.write(`error: ${err.message}\n`);
      return EXIT.usage;
    }
    if (err instanceof ApiError) {
      stderr.write(`error: ${err.message}\n`);
      return EXIT.api;
    }
    stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return EXIT.api;
  }
}
