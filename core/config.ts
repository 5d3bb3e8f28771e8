import path from 'node:path';
import { z } from 'zod';
import { loadClientConnectConfig, type ClientConnectConfig } from '@temporalio/envconfig';

/**
 * The one configuration schema. It is parsed once, at start-up, by a composition root
 * (worker main, API server, dev supervisor). Nothing else reads process.env.
 */
const emptyToUndefined = (value: unknown) => (value === '' ? undefined : value);
const optionalString = z.preprocess(emptyToUndefined, z.string().optional());

const envSchema = z.object({
  TEMPORAL_ADDRESS: optionalString,
  TEMPORAL_NAMESPACE: z.preprocess(emptyToUndefined, z.string().default('default')),
  TEMPORAL_CLI_PATH: optionalString,
  TASK_QUEUE: z.preprocess(emptyToUndefined, z.string().regex(/^[\w.-]+$/, 'letters, digits, ".", "_" or "-"').default('agent-runs')),
  DATABASE_URL: z.preprocess(
    emptyToUndefined,
    z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL').optional(),
  ),
  DATA_DIR: z.preprocess(emptyToUndefined, z.string().default('.data')),
  PORT: z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(65535).default(3000)),
  HOST: z.preprocess(emptyToUndefined, z.string().default('127.0.0.1')),
  LOG_LEVEL: z.preprocess(
    emptyToUndefined,
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ),
  API_KEY: z.preprocess(emptyToUndefined, z.string().min(16, 'must be at least 16 characters').optional()),
  WORKFLOW_BUNDLE_PATH: optionalString,
  TEMPORAL_UI_PORT: z.preprocess(emptyToUndefined, z.coerce.number().int().min(1).max(65535).default(8233)),
  MCP_TASK_QUEUES: z.preprocess(emptyToUndefined, z.string().regex(/^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$/, 'comma-separated task queue names').optional()),
  RATE_LIMIT_PER_MINUTE: z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).default(600)),
  TEMPORAL_RETENTION: z.preprocess(emptyToUndefined, z.string().regex(/^\d+[hd]$/, 'like 72h or 7d').default('7d')),
  AGENTS_DIR: z.preprocess(emptyToUndefined, z.string().default('agents')),
  LANGFUSE_PUBLIC_KEY: optionalString,
  LANGFUSE_SECRET_KEY: optionalString,
  LANGFUSE_BASE_URL: z.preprocess(emptyToUndefined, z.url().optional()),
  LANGFUSE_HOST: z.preprocess(emptyToUndefined, z.url().optional()),
});

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
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  apiKey?: string;
  workflowBundlePath?: string;
  temporalUiPort: number;
  temporalRetention: string;
  /** directory of *.chatmd agent files, synced into the database by the API (absolute) */
  agentsDir: string;
  /** task queues of pinned integrations this worker also serves (activities only) */
  mcpTaskQueues: string[];
  /** requests per minute per API key (or per client address without one); 0 turns the limit off */
  rateLimitPerMinute: number;
  /** Langfuse tracing; absent (no LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY) means off */
  langfuse?: { publicKey: string; secretKey: string; baseUrl?: string };
  /** reads an LLM API key by the name an agent's model gives (`apiKeyEnv`); keys are never stored */
  readSecret: (envName: string) => string | undefined;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  let temporalConnect: ClientConnectConfig;
  try {
    temporalConnect = loadClientConnectConfig({
      overrideEnvVars: Object.fromEntries(
        Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
      ),
    });
  } catch (err) {
    throw new ConfigError(`Invalid Temporal client configuration: ${(err as Error).message}`);
  }
  return {
    temporalAddress: e.TEMPORAL_ADDRESS,
    temporalNamespace: e.TEMPORAL_NAMESPACE,
    temporalConnect,
    temporalCliPath: e.TEMPORAL_CLI_PATH,
    taskQueue: e.TASK_QUEUE,
    databaseUrl: e.DATABASE_URL,
    dataDir: path.resolve(e.DATA_DIR),
    port: e.PORT,
    host: e.HOST,
    logLevel: e.LOG_LEVEL,
    apiKey: e.API_KEY,
    workflowBundlePath: e.WORKFLOW_BUNDLE_PATH,
    temporalUiPort: e.TEMPORAL_UI_PORT,
    temporalRetention: e.TEMPORAL_RETENTION,
    agentsDir: path.resolve(e.AGENTS_DIR),
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    mcpTaskQueues: e.MCP_TASK_QUEUES ? e.MCP_TASK_QUEUES.split(',') : [],
    langfuse: langfuseConfig(e),
    readSecret: (envName) => emptyToUndefined(env[envName]) as string | undefined,
  };
}

function langfuseConfig(e: z.infer<typeof envSchema>): AppConfig['langfuse'] {
  if (!e.LANGFUSE_PUBLIC_KEY && !e.LANGFUSE_SECRET_KEY) return undefined;
  if (!e.LANGFUSE_PUBLIC_KEY || !e.LANGFUSE_SECRET_KEY) {
    throw new ConfigError('Invalid configuration:\n  LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY must be set together');
  }
  return { publicKey: e.LANGFUSE_PUBLIC_KEY, secretKey: e.LANGFUSE_SECRET_KEY, baseUrl: e.LANGFUSE_BASE_URL ?? e.LANGFUSE_HOST };
}
