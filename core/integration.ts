import type { ApprovalPolicy } from './approval';
import type { IntegrationProtocol } from './protocol-era';
import type { SamplingMode } from './sampling';

/**
 * An integration: an MCP server the engine reaches for agents, as stored and as the worker uses it.
 * Its `env`, `headers` and `auth.clientSecret` are stored sealed (store/integrations/secrets.ts).
 */
/**
 * An HTTP server behind the MCP authorization flow (OAuth 2.1 with PKCE). Without clientId the
 * engine registers itself (dynamic client registration, or the client ID metadata document at
 * clientMetadataUrl when the authorization server accepts one). `clientSecret` is a secret.
 */
export interface OAuthSettings {
  type: 'oauth';
  scopes?: string[];
  clientId?: string;
  clientSecret?: string;
  clientMetadataUrl?: string;
}

/** How the worker reaches an MCP server. `env`, `headers` and `auth.clientSecret` hold secrets: never log or return them. */
export type IntegrationTransport =
  | { type: 'stdio'; command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  | { type: 'http'; url: string; headers?: Record<string, string>; auth?: OAuthSettings };
export interface Integration {
  id: string;
  name: string;
  transport: IntegrationTransport;
  toolTimeoutMs: number;
  /** bound on a tool call that keeps reporting progress; null: the engine's default bound */
  maxTotalTimeoutMs: number | null;
  maxResourceBytes: number;
  /** the largest tool response a call accepts; a larger one is refused before it is stored or shown */
  maxResultBytes: number;
  /** whether readOnlyHint/idempotentHint from this server may be trusted to retry its tools */
  trustAnnotations: boolean;
  /**
   * whether the engine retries its tools that are neither read-only nor idempotent too: the
   * operator's word that the server deduplicates calls by their idempotency key (core/tool-call-ids.ts)
   */
  retryNonIdempotent: boolean;
  enabled: boolean;
  /** whether this server's conventional prompts (system_prompt, user_prompt, …) are injected into runs */
  promptInjection: boolean;
  /** prompt names never injected (matched case-insensitively) */
  disabledPrompts: string[];
  /** arguments passed to prompts/get when injecting, keyed by prompt name */
  promptArguments: Record<string, Record<string, string>>;
  /** when set, the integration's tools are discovered and called only by workers polling this task queue */
  taskQueue: string | null;
  /** which of its tools wait for a person's approval before they run; null: none */
  approval: ApprovalPolicy | null;
  /** whether the engine declares the MCP `elicitation` capability to this server and relays its questions to the API */
  elicitation: boolean;
  /** how long a tool call waits for an answer to the server's questions before it declines them */
  elicitationTimeoutMs: number;
  /**
   * whether its server and OAuth endpoints may be on loopback or private addresses (the operator's
   * decision; see platform/net/address-guard.ts)
   */
  allowPrivateNetwork: boolean;
  /** which MCP protocol era the engine speaks with it: negotiated (`auto`, kept per integration) or pinned */
  protocol: IntegrationProtocol;
  /** whether the server may sample the run's model (core/sampling.ts): never, after a reviewer approves each request, or always */
  sampling: SamplingMode;
  /** the cap on a sampling request's maxTokens */
  samplingMaxTokens: number;
  /** how long a tool call its server runs as a task may take in all (MCP tasks) */
  taskTimeoutMs: number;
  /** how long a worker keeps the conventional prompts it fetched (mcp-client/prompt-cache.ts); null: none are kept */
  promptCacheTtlMs: number | null;
  /** how many of its calls one worker runs at once; further calls wait their turn without holding a worker's slot */
  maxConcurrentCalls: number;
  createdAt: string;
  updatedAt: string;
}

export interface NewIntegration {
  name: string;
  transport: IntegrationTransport;
  toolTimeoutMs?: number;
  maxTotalTimeoutMs?: number | null;
  maxResourceBytes?: number;
  maxResultBytes?: number;
  trustAnnotations?: boolean;
  retryNonIdempotent?: boolean;
  enabled?: boolean;
  promptInjection?: boolean;
  disabledPrompts?: string[];
  promptArguments?: Record<string, Record<string, string>>;
  taskQueue?: string | null;
  approval?: ApprovalPolicy | null;
  elicitation?: boolean;
  elicitationTimeoutMs?: number;
  allowPrivateNetwork?: boolean;
  protocol?: IntegrationProtocol;
  sampling?: SamplingMode;
  samplingMaxTokens?: number;
  taskTimeoutMs?: number;
  promptCacheTtlMs?: number | null;
  maxConcurrentCalls?: number;
}

/** What API responses show: the names of env variables and headers, never their values. */
export type PublicTransport =
  | { type: 'stdio'; command: string; args: string[]; envKeys: string[]; cwd?: string }
  | { type: 'http'; url: string; headerKeys: string[]; auth?: PublicOAuth };

/** An HTTP integration's OAuth as API responses show it: whether a client secret is set, never the secret. */
interface PublicOAuth {
  type: 'oauth';
  scopes?: string[];
  clientId?: string;
  clientMetadataUrl?: string;
  clientSecretSet: boolean;
}

export type PublicIntegration = Omit<Integration, 'transport' | 'elicitationTimeoutMs' | 'taskTimeoutMs' | 'promptCacheTtlMs'> & {
  transport: PublicTransport; elicitationTimeout: string; taskTimeout: string; promptCacheTtl: string | null;
};

export const DEFAULT_ELICITATION_TIMEOUT_MS = 10 * 60_000;
/** A task's bound: an hour by default; at most a day, so that a run's polls of one task stay a small part of its history. */
export const DEFAULT_TASK_TIMEOUT_MS = 3_600_000;
export const MAX_TASK_TIMEOUT_MS = 24 * 3_600_000;

/**
 * A tool call's timeouts, by default: a request 60 s, a call that keeps reporting progress 10 min
 * (or its request timeout, when longer). A call holds a worker's slot that long: raising them is
 * the operator's act.
 */
export const DEFAULT_TOOL_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_TOTAL_TIMEOUT_MS = 10 * 60_000;

/**
 * How many calls of one integration a worker runs at once, by default: well below a worker's tool
 * slots (TOOL_CALL_SLOTS, 100 by default), so that one integration whose server hangs cannot take
 * them all. Raising it is the operator's act.
 */
export const CONCURRENT_CALLS = { default: 10, max: 1000 } as const;

const MiB = 1024 * 1024;

/**
 * Defaults and caps of an integration's size bounds. A resource is read as one string, and V8's
 * longest string is about 512 MiB; a tool result is stored and shown whole.
 */
export const SIZE_BOUNDS = {
  maxResultBytes: { default: MiB, max: 64 * MiB },
  maxResourceBytes: { default: 256 * MiB, max: 256 * MiB },
} as const;

/** A Temporal task queue name an integration may be pinned to (MCP_TASK_QUEUES lists them). */
export const TASK_QUEUE_PATTERN = /^[A-Za-z0-9_.-]{1,200}$/;

/** Names prefix tool names as `<name>__<tool>`, so "__" is reserved. The table checks the same rule. */
export const INTEGRATION_NAME_PATTERN = /^[a-zA-Z][a-zA-Z0-9_-]*$/;

export function integrationNameProblem(name: string): string | undefined {
  if (!INTEGRATION_NAME_PATTERN.test(name)) return 'must start with a letter and contain only letters, digits, "_" and "-"';
  if (name.includes('__')) return 'must not contain "__" (it separates the integration from the tool name)';
  return undefined;
}

