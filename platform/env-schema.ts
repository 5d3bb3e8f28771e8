import { z } from 'zod';
import { DEFAULT_LLM_ANSWER_BOUNDS } from '../core/llm-answer-bounds';

/**
 * The one configuration schema. It is parsed once, at start-up, by a composition root
 * (worker main, API server, dev supervisor). Nothing else reads process.env.
 */
export const emptyToUndefined = (value: unknown) => (value === '' ? undefined : value);
const optionalString = z.preprocess(emptyToUndefined, z.string().optional());
/** 32 bytes, base64 (openssl rand -base64 32) */
const secretsKey = z.preprocess(emptyToUndefined, z.string()
  .refine((v) => /^[A-Za-z0-9+/]+={0,2}$/.test(v.trim()) && Buffer.from(v.trim(), 'base64').length === 32,
    'must be 32 bytes in base64 (openssl rand -base64 32)')
  .transform((v) => Buffer.from(v.trim(), 'base64')).optional());

/** A bound in bytes on a model's answer: 1 KiB to 256 MiB. */
const answerBound = (fallback: number) => z.preprocess(
  emptyToUndefined,
  z.coerce.number().int().min(1024).max(256 * 1024 * 1024).default(fallback),
);
/** How OTLP goes: by gRPC, or by HTTP (the Temporal SDK sends protobuf either way) */
const otlpProtocol = z.preprocess(
  emptyToUndefined,
  z.enum(['grpc', 'http/protobuf', 'http/json'], 'grpc, http/protobuf or http/json').optional(),
);
/** A port npm start's own services must take (unset: it picks them) */
const port = z.preprocess(emptyToUndefined, z.coerce.number().int().min(1).max(65535).optional());

export const envSchema = z.object({
  TEMPORAL_ADDRESS: optionalString,
  TEMPORAL_NAMESPACE: z.preprocess(emptyToUndefined, z.string().default('default')),
  TEMPORAL_CLI_PATH: optionalString,
  TASK_QUEUE: z.preprocess(
    emptyToUndefined,
    z.string().regex(/^[\w.-]+$/, 'letters, digits, ".", "_" or "-"').default('agent-runs'),
  ),
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
  ADMIN_API_KEY: z.preprocess(emptyToUndefined, z.string().min(16, 'must be at least 16 characters').optional()),
  ALLOWED_HOSTS: z.preprocess(
    emptyToUndefined,
    z.string().regex(/^[A-Za-z0-9.:[\]-]+(,[A-Za-z0-9.:[\]-]+)*$/, 'comma-separated host names, each optionally with :port').optional(),
  ),
  PUBLIC_URL: z.preprocess(
    emptyToUndefined,
    z.url({
      protocol: /^https?$/, error: 'must be the http(s) URL browsers reach the API at, such as https://agents.example.com',
    }).optional(),
  ),
  AUTH_ISSUER: z.preprocess(
    emptyToUndefined,
    z.url({ protocol: /^https?$/, error: 'must be the http(s) URL of an OpenID Connect issuer, such as https://login.example.com' })
      .optional(),
  ),
  AUTH_AUDIENCE: optionalString,
  AUTH_TENANT_CLAIM: z.preprocess(emptyToUndefined, z.string().default('tenant')),
  AUTH_ROLES_CLAIM: z.preprocess(emptyToUndefined, z.string().default('roles')),
  AUTH_OPERATOR_ROLE: optionalString,
  AUTH_CONSOLE_CLIENT_ID: z.preprocess(
    emptyToUndefined,
    z.string().max(200).regex(/^[\x21-\x7e]+$/, 'a client id: printable ASCII without spaces').optional(),
  ),
  CORS_ORIGINS: z.preprocess(
    emptyToUndefined,
    z.string().regex(/^https?:\/\/[^,/\s]+(,https?:\/\/[^,/\s]+)*$/, 'comma-separated origins such as https://app.example.com').optional(),
  ),
  LLM_KEY_ENVS: z.preprocess(
    emptyToUndefined,
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*(,[A-Za-z_][A-Za-z0-9_]*)*$/, 'comma-separated environment variable names').optional(),
  ),
  LLM_MAX_TEXT_BYTES: answerBound(DEFAULT_LLM_ANSWER_BOUNDS.textBytes),
  LLM_MAX_TOOL_ARGUMENT_BYTES: answerBound(DEFAULT_LLM_ANSWER_BOUNDS.toolArgumentBytes),
  LLM_MAX_ANSWER_BYTES: answerBound(DEFAULT_LLM_ANSWER_BOUNDS.answerBytes),
  LLM_MAX_TOOL_CALLS_PER_ANSWER: z.preprocess(
    emptyToUndefined,
    z.coerce.number().int().min(1).max(100_000).default(DEFAULT_LLM_ANSWER_BOUNDS.toolCalls),
  ),
  INTEGRATIONS_FILE: optionalString,
  PRICES_FILE: optionalString,
  WORKFLOW_BUNDLE_PATH: optionalString,
  TEMPORAL_PORT: port,
  TEMPORAL_UI_PORT: port,
  POSTGRES_PORT: port,
  TEMPORAL_UI_URL: z.preprocess(
    emptyToUndefined,
    z.url({
      protocol: /^https?$/, error: 'must be the http(s) URL of the Temporal Web UI, such as https://temporal.example.com',
    }).optional(),
  ),
  MCP_TASK_QUEUES: z.preprocess(
    emptyToUndefined,
    z.string().regex(/^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$/, 'comma-separated task queue names').optional(),
  ),
  RATE_LIMIT_PER_MINUTE: z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).default(600)),
  TEMPORAL_RETENTION: z.preprocess(emptyToUndefined, z.string().regex(/^\d+[hd]$/, 'like 72h or 7d').default('7d')),
  AGENTS_DIR: z.preprocess(emptyToUndefined, z.string().default('agents')),
  LANGFUSE_PUBLIC_KEY: optionalString,
  LANGFUSE_SECRET_KEY: optionalString,
  LANGFUSE_BASE_URL: z.preprocess(emptyToUndefined, z.url().optional()),
  LANGFUSE_HOST: z.preprocess(emptyToUndefined, z.url().optional()),
  SECRETS_KEY: secretsKey,
  SECRETS_KEY_PREVIOUS: secretsKey,
  MCP_REQUEST_STATE_KEY: z.preprocess(emptyToUndefined, z.string()
    .refine((v) => Buffer.byteLength(v, 'utf8') >= 32, 'must be at least 32 bytes (openssl rand -base64 32)')
    .transform((v) => Buffer.from(v, 'utf8')).optional()),
  BLOCK_PRIVATE_NETWORKS: z.preprocess(emptyToUndefined, z.enum(['true', 'false'], 'true or false').default('false')),
  MCP_AGENT_TASKS: z.preprocess(emptyToUndefined, z.enum(['true', 'false'], 'true or false').default('true')),
  WORKER_DEPLOYMENT_NAME: z.preprocess(
    emptyToUndefined,
    z.string().regex(/^[A-Za-z0-9_-]{1,200}$/, 'letters, digits, "_" or "-"').optional(),
  ),
  WORKER_BUILD_ID: z.preprocess(
    emptyToUndefined,
    z.string().regex(/^[A-Za-z0-9_.+-]{1,200}$/, 'letters, digits, ".", "_", "+" or "-"').optional(),
  ),
  WORKER_NICE: z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(19).default(10)),
  TOOL_CALL_SLOTS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(1).max(10_000).default(100)),
  XDG_RUNTIME_DIR: optionalString,
  METRICS_PORT: z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(65535).optional()),
  METRICS_HOST: z.preprocess(emptyToUndefined, z.string().default('127.0.0.1')),
  METRICS_TOKEN: z.preprocess(emptyToUndefined, z.string().min(16, 'must be at least 16 characters').optional()),
  METRICS_MAX_LABEL_VALUES: z.preprocess(emptyToUndefined, z.coerce.number().int().min(1).max(10_000).default(100)),
  TEMPORAL_METRICS_PORT: z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(65535).optional()),
  // OpenTelemetry's own variables (the OTLP exporter specification): where the Temporal SDK's metrics go by OTLP.
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: z.preprocess(
    emptyToUndefined,
    z.url({ protocol: /^(https?|grpcs?)$/, error: 'must be an http(s):// or grpc(s):// URL, such as http://collector:4318/v1/metrics' })
      .optional(),
  ),
  OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: otlpProtocol,
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol,
  OTEL_EXPORTER_OTLP_METRICS_HEADERS: z.preprocess(
    emptyToUndefined,
    z.string().regex(/^[^=,\s]+=[^,]*(,[^=,\s]+=[^,]*)*$/, 'comma-separated key=value pairs').optional(),
  ),
  OTEL_METRIC_EXPORT_INTERVAL: z.preprocess(emptyToUndefined, z.coerce.number().int().min(100).max(3_600_000).default(60_000)),
});

export type Env = z.infer<typeof envSchema>;
