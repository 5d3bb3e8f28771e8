import { tokenAuthConfig, type TokenAuthConfig } from './token-auth-config';
import os from 'node:os';
import path from 'node:path';
import { loadClientConnectConfig, type ClientConnectConfig } from '@temporalio/envconfig';
import { DEFAULT_LLM_KEY_ENVS } from '../core/llm-keys';
import type { LlmAnswerBounds } from '../core/llm-answer-bounds';
import type { NetworkPolicy } from './net/address-guard';
import { emptyToUndefined, envSchema, type Env } from './env-schema';
import { otlpMetricsConfig, type OtlpMetricsConfig } from './metrics/otlp-config';

export interface AppConfig {
  /** Absent: the dev supervisor starts an embedded Temporal dev server. */
  temporalAddress?: string;
  temporalNamespace: string;
  /** Connection options from @temporalio/envconfig (TLS, API key, gRPC metadata). */
  temporalConnect: ClientConnectConfig;
  temporalCliPath?: string;
  taskQueue: string;
  /** Absent: the dev supervisor starts an embedded PostgreSQL in the data dir. */
  databaseUrl?: string;
  dataDir: string;
  port: number;
  host: string;
  logLevel: Env['LOG_LEVEL'];
  apiKey?: string;
  /** the operator's key: may decide what workers execute and where stored secrets go */
  adminApiKey?: string;
  /** Host names (optionally with :port) a non-loopback API answers besides loopback names; absent: any */
  allowedHosts?: string[];
  /** origins (scheme://host[:port]) that browsers may call the API from, with CORS headers */
  corsOrigins: string[];
  /**
   * where browsers reach the API (behind a proxy); OAuth redirects come back to PUBLIC_URL/oauth/callback.
   * Absent: the address a request came to
   */
  publicUrl?: string;
  /** tokens from the operator's OpenID Connect provider (AUTH_ISSUER); absent, keys alone */
  tokenAuth?: TokenAuthConfig;
  /** the environment variables an agent's model.apiKeyEnv may name (the provider defaults plus LLM_KEY_ENVS) */
  llmKeyEnvs: string[];
  /** how much of one model answer a worker reads: its text, each tool call's arguments, all of it, its tool calls */
  llmAnswerBounds: LlmAnswerBounds;
  /** the operator's MCP server list (Claude Desktop or VS Code JSON), loaded by the API at start (absolute) */
  integrationsFile?: string;
  /** PRICES_FILE: the operator's price table (core/pricing.ts), read by the worker at its start */
  pricesFile?: string;
  workflowBundlePath?: string;
  /**
   * npm start's ports: its Temporal dev server's frontend and Web UI, and its embedded PostgreSQL.
   * Set, each is taken as it is, and a start where one is taken stops naming it; unset, npm start
   * prefers 7233 and 8233 (another free port when taken) and gives PostgreSQL any free port.
   */
  temporalPort?: number;
  temporalUiPort?: number;
  postgresPort?: number;
  /** the Temporal Web UI the console links runs to; npm start uses its dev server's when unset */
  temporalUiUrl?: string;
  temporalRetention: string;
  /** directory of *.chatmd agent files, synced into the database by the API (absolute) */
  agentsDir: string;
  /** task queues of pinned integrations this worker also serves (activities only) */
  mcpTaskQueues: string[];
  /**
   * Worker Versioning (worker/versioning.ts): on when WORKER_DEPLOYMENT_NAME is set; the build id is
   * WORKER_BUILD_ID, or else a hash of the workflow bundle. Absent: the worker is unversioned.
   */
  workerDeployment?: { name: string; buildId?: string };
  /** how many tool activities (calls, discovery, questions to MCP servers) a worker runs at once, beside as many LLM turns */
  toolCallSlots: number;
  /**
   * the scheduling niceness (0 to 19) of the runs' execution: a stand-alone worker (and the MCP servers
   * it starts), and the Temporal dev server `npm start` starts
   */
  workerNice: number;
  /** where a worker records its stdio MCP servers' process groups: a directory of this user's alone (platform/private-files.ts) */
  mcpGroupsDir: string;
  /** requests per minute per API key (or per client address without one); 0 turns the limit off */
  rateLimitPerMinute: number;
  /** Langfuse tracing; absent (no LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY) means off */
  langfuse?: { publicKey: string; secretKey: string; baseUrl?: string };
  /** seals secrets at rest (SECRETS_KEY) and opens them (either); absent under npm start, which keeps one in DATA_DIR */
  secretKeys: { current?: Buffer; previous?: Buffer };
  /**
   * signs the requestState /mcp hands a 2026-era client with an approval question; the same on every
   * API process. Absent: derived from SECRETS_KEY (platform/secrets/request-state-key.ts)
   */
  mcpRequestStateKey?: Buffer;
  /** MCP_AGENT_TASKS: whether /mcp and agent-engine mcp run agents as MCP tasks when a client asks (an agent can still say no) */
  mcpAgentTasks: boolean;
  /** which addresses MCP HTTP servers and LLM base URLs may resolve to (metadata and link-local never) */
  networkPolicy: NetworkPolicy;
  /** Prometheus metrics (platform/metrics/): served by `npm run api` and `npm run worker` when METRICS_PORT is set, by npm start always */
  metrics: MetricsConfig;
  /** reads an LLM API key by the name an agent's model gives (`apiKeyEnv`), only names in llmKeyEnvs; keys are never stored */
  readSecret: (envName: string) => string | undefined;
}

export interface MetricsConfig {
  /** absent: `npm run api` and `npm run worker` serve no metrics (npm start picks free ports) */
  port?: number;
  host: string;
  /** the bearer token a scrape must send; required off loopback */
  token?: string;
  /** the values kept per label of each metric; further ones are counted as `other` */
  maxLabelValues: number;
  /** where `npm run worker` serves the Temporal SDK's own metrics (TEMPORAL_METRICS_PORT); absent: nowhere (npm start picks a free port) */
  temporalPort?: number;
  /** where workers send the Temporal SDK's metrics by OTLP instead (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) */
  otlp?: OtlpMetricsConfig;
}

const list = (value: string | undefined) => (value ? value.split(',') : []);

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** The engine's configuration, read from the environment by the schema (env-schema.ts); a ConfigError names what is wrong. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const e = parseEnv(env);
  const llmKeyEnvs = [...new Set([...DEFAULT_LLM_KEY_ENVS, ...list(e.LLM_KEY_ENVS)])];
  return {
    temporalAddress: e.TEMPORAL_ADDRESS,
    temporalNamespace: e.TEMPORAL_NAMESPACE,
    temporalConnect: temporalConnectConfig(env),
    temporalCliPath: e.TEMPORAL_CLI_PATH,
    taskQueue: e.TASK_QUEUE,
    databaseUrl: e.DATABASE_URL,
    dataDir: path.resolve(e.DATA_DIR),
    port: e.PORT,
    host: e.HOST,
    logLevel: e.LOG_LEVEL,
    apiKey: e.API_KEY,
    adminApiKey: e.ADMIN_API_KEY,
    allowedHosts: e.ALLOWED_HOSTS ? list(e.ALLOWED_HOSTS).map((h) => h.toLowerCase()) : undefined,
    corsOrigins: list(e.CORS_ORIGINS).map((o) => o.toLowerCase()),
    publicUrl: e.PUBLIC_URL,
    tokenAuth: tokenAuthConfig(e),
    llmKeyEnvs,
    llmAnswerBounds: {
      textBytes: e.LLM_MAX_TEXT_BYTES, toolArgumentBytes: e.LLM_MAX_TOOL_ARGUMENT_BYTES, answerBytes: e.LLM_MAX_ANSWER_BYTES,
      toolCalls: e.LLM_MAX_TOOL_CALLS_PER_ANSWER,
    },
    integrationsFile: e.INTEGRATIONS_FILE ? path.resolve(e.INTEGRATIONS_FILE) : undefined,
    pricesFile: e.PRICES_FILE ? path.resolve(e.PRICES_FILE) : undefined,
    workflowBundlePath: e.WORKFLOW_BUNDLE_PATH,
    temporalPort: e.TEMPORAL_PORT,
    temporalUiPort: e.TEMPORAL_UI_PORT,
    postgresPort: e.POSTGRES_PORT,
    temporalUiUrl: e.TEMPORAL_UI_URL?.replace(/\/+$/, ''),
    temporalRetention: e.TEMPORAL_RETENTION,
    agentsDir: path.resolve(e.AGENTS_DIR),
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    mcpTaskQueues: e.MCP_TASK_QUEUES ? e.MCP_TASK_QUEUES.split(',') : [],
    workerNice: e.WORKER_NICE,
    toolCallSlots: e.TOOL_CALL_SLOTS,
    ...workerDeployment(e),
    mcpGroupsDir: mcpGroupsDir(e.XDG_RUNTIME_DIR),
    langfuse: langfuseConfig(e),
    secretKeys: { current: e.SECRETS_KEY, previous: e.SECRETS_KEY_PREVIOUS },
    mcpRequestStateKey: e.MCP_REQUEST_STATE_KEY,
    mcpAgentTasks: e.MCP_AGENT_TASKS === 'true',
    networkPolicy: { blockPrivateNetworks: e.BLOCK_PRIVATE_NETWORKS === 'true' },
    metrics: {
      port: e.METRICS_PORT, host: e.METRICS_HOST, token: e.METRICS_TOKEN, maxLabelValues: e.METRICS_MAX_LABEL_VALUES,
      temporalPort: e.TEMPORAL_METRICS_PORT, otlp: otlpMetricsConfig(e),
    },
    // The second wall behind the agent checks: whatever an agent names, only allowed variables are read.
    readSecret: (envName) => (llmKeyEnvs.includes(envName) ? emptyToUndefined(env[envName]) as string | undefined : undefined),
  };
}

/** The environment checked against the schema, and the rules that tie two variables together. */
function parseEnv(env: NodeJS.ProcessEnv): Env {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.ADMIN_API_KEY && e.ADMIN_API_KEY === e.API_KEY) {
    throw new ConfigError('Invalid configuration:\n  ADMIN_API_KEY must differ from API_KEY: holders of the API key must not be operators');
  }
  if (e.AUTH_ISSUER && !e.PUBLIC_URL) {
    throw new ConfigError('Invalid configuration:\n  AUTH_ISSUER needs PUBLIC_URL: tokens are checked for the audience PUBLIC_URL/mcp');
  }
  if (e.AUTH_CONSOLE_CLIENT_ID && !e.AUTH_ISSUER) {
    throw new ConfigError('Invalid configuration:\n  AUTH_CONSOLE_CLIENT_ID needs AUTH_ISSUER: it names a client of that provider');
  }
  if (e.WORKER_BUILD_ID && !e.WORKER_DEPLOYMENT_NAME) {
    throw new ConfigError('Invalid configuration:\n'
      + '  WORKER_BUILD_ID needs WORKER_DEPLOYMENT_NAME: a build id belongs to a Worker Deployment');
  }
  if (!isLoopbackHost(e.METRICS_HOST) && !e.METRICS_TOKEN) {
    throw new ConfigError(`Invalid configuration:\n  METRICS_HOST=${e.METRICS_HOST} is not a loopback address and no METRICS_TOKEN is set: `
      + 'metrics labels hold agent and integration names. Set METRICS_TOKEN (at least 16 characters), or METRICS_HOST=127.0.0.1');
  }
  if (e.TEMPORAL_METRICS_PORT !== undefined && e.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) {
    throw new ConfigError('Invalid configuration:\n  TEMPORAL_METRICS_PORT and OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: '
      + 'the Temporal SDK exports its metrics one way, served for Prometheus or sent by OTLP; set one');
  }
  return e;
}

/** Connection options from @temporalio/envconfig's variables (TEMPORAL_TLS_*, TEMPORAL_API_KEY, …). */
function temporalConnectConfig(env: NodeJS.ProcessEnv): ClientConnectConfig {
  try {
    return loadClientConnectConfig({
      overrideEnvVars: Object.fromEntries(
        Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
      ),
    });
  } catch (err) {
    throw new ConfigError(`Invalid Temporal client configuration: ${(err as Error).message}`);
  }
}

function workerDeployment(e: Env): Pick<AppConfig, 'workerDeployment'> {
  if (!e.WORKER_DEPLOYMENT_NAME) return {};
  return { workerDeployment: { name: e.WORKER_DEPLOYMENT_NAME, ...(e.WORKER_BUILD_ID ? { buildId: e.WORKER_BUILD_ID } : {}) } };
}

/**
 * The user's runtime directory (XDG_RUNTIME_DIR: private to the user by the base directory spec,
 * which also says a relative one is ignored), else a directory of the user's in the temp dir.
 * Never a place shared by users: a record there tells a worker which process group to kill.
 */
function mcpGroupsDir(runtimeDir: string | undefined): string {
  const base = runtimeDir && path.isAbsolute(runtimeDir)
    ? path.join(runtimeDir, 'agent-engine')
    : path.join(os.tmpdir(), `agent-engine-${process.getuid?.() ?? 'user'}`);
  return path.join(base, 'mcp-groups');
}

function langfuseConfig(e: Env): AppConfig['langfuse'] {
  if (!e.LANGFUSE_PUBLIC_KEY && !e.LANGFUSE_SECRET_KEY) return undefined;
  if (!e.LANGFUSE_PUBLIC_KEY || !e.LANGFUSE_SECRET_KEY) {
    throw new ConfigError('Invalid configuration:\n  LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY must be set together');
  }
  return { publicKey: e.LANGFUSE_PUBLIC_KEY, secretKey: e.LANGFUSE_SECRET_KEY, baseUrl: e.LANGFUSE_BASE_URL ?? e.LANGFUSE_HOST };
}

/** Whether an address to listen on (HOST) is reachable only from this machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || h === '::1' || /^(::ffff:)?127\.\d+\.\d+\.\d+$/.test(h);
}

/**
 * Whether every caller of the API is the operator: no ADMIN_API_KEY, and listening on loopback
 * (local development). Such an API lets everybody do the operator's acts.
 */
export function everyCallerIsOperator(config: { adminApiKey?: string; host: string }): boolean {
  return !config.adminApiKey && isLoopbackHost(config.host);
}

/**
 * An API reachable from other machines without a key would let anyone run commands on the
 * workers; it refuses to start instead. Called by every process that starts the API, first thing.
 */
export function checkApiExposure(config: Pick<AppConfig, 'host' | 'apiKey' | 'tokenAuth'>): void {
  // Tokens from the operator's provider (AUTH_ISSUER) authenticate every request as well as a key does.
  if (isLoopbackHost(config.host) || config.apiKey || config.tokenAuth) return;
  throw new ConfigError(
    `Refusing to start the API: HOST=${config.host} is not a loopback address and no API_KEY is set, so anyone who can reach `
    + 'this port could create integrations and run commands on the workers. Set API_KEY (at least 16 characters; '
    + 'ADMIN_API_KEY too for operator changes), or listen on HOST=127.0.0.1.',
  );
}
