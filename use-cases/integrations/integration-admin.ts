import { isDeepStrictEqual } from 'node:util';
import {
  CONCURRENT_CALLS, DEFAULT_ELICITATION_TIMEOUT_MS, DEFAULT_MAX_TOTAL_TIMEOUT_MS, DEFAULT_TASK_TIMEOUT_MS, DEFAULT_TOOL_TIMEOUT_MS,
  SIZE_BOUNDS, type Integration, type IntegrationTransport,
} from '../../core/integration';
import type { OperatorNames } from '../../platform/operator-names';
import { DEFAULT_SAMPLING_MAX_TOKENS } from '../../core/sampling';
import { requireAdmin, requireAdminForName, type Caller } from '../caller';

/**
 * What only the operator may decide about an integration (use-cases/caller.ts): what a worker
 * executes, where stored secrets go, who is asked before a tool runs, which machine runs the
 * server, and how much of its output the engine takes in.
 */

const DECISIVE_FIELDS = { stdio: ['command', 'args', 'cwd', 'env'], http: ['url', 'auth'] } as const;

/**
 * The fields whose change decides what a worker executes or where stored secrets go: a stdio
 * server's command, args, cwd and env (NODE_OPTIONS or LD_PRELOAD run code too), an HTTP server's
 * url (its stored headers follow it) and auth (the OAuth client and scopes: a change forgets the
 * operator's authorization, which only the operator may give again), and the type. Headers alone
 * may change: they only replace secrets sent to the same URL.
 */
export function adminFieldsChanged(current: IntegrationTransport, next: IntegrationTransport): string[] {
  if (current.type !== next.type) return ['type'];
  const before = current as Record<string, unknown>;
  const after = next as Record<string, unknown>;
  return DECISIVE_FIELDS[next.type].filter((field) => !isDeepStrictEqual(before[field] ?? null, after[field] ?? null));
}

/** Whether setting `next` over `current` (undefined while the integration is being created) needs the admin key. */
type Widens<K extends keyof Integration> = (next: Integration[K], current: Integration[K] | undefined) => boolean;

type NumericSetting =
  | 'maxResultBytes' | 'maxResourceBytes' | 'toolTimeoutMs' | 'elicitationTimeoutMs' | 'maxConcurrentCalls' | 'taskTimeoutMs';

const raisesAboveDefault = (bound: { default: number }): Widens<NumericSetting> =>
  (next, current) => next > Math.max(current ?? 0, bound.default);

/**
 * The settings only the operator may set, each with the change that needs the admin key; the rest
 * of a setting's changes (turning it off, lowering a bound, the same value again) stay the user's.
 */
const ADMIN_SETTINGS = {
  // Who is asked before a tool runs, whichever way it changes.
  approval: (next, current) => !isDeepStrictEqual(next ?? null, current ?? null),
  // The server's questions reach whoever answers the run's inputs.
  elicitation: (next, current) => next && !current,
  // The server's own readOnlyHint then decides whether `unless_read_only` asks, and its hints whether a call is retried.
  trustAnnotations: (next, current) => next && !current,
  // A call that may have run is sent again: only the operator may say the server deduplicates it.
  retryNonIdempotent: (next, current) => next && !current,
  // Which machine's workers run the server's command, and see its output: pinning and unpinning alike.
  taskQueue: (next, current) => (next ?? null) !== (current ?? null),
  // Services on loopback and private networks answer whoever reaches them: which servers may be there.
  allowPrivateNetwork: (next, current) => next && !current,
  // The server then spends the run's model (and its budget), with a reviewer or without.
  sampling: (next, current) => next !== 'never' && next !== (current ?? 'never'),
  samplingMaxTokens: (next, current) => next > Math.max(current ?? 0, DEFAULT_SAMPLING_MAX_TOKENS),
  // A task holds the server's work (and the run) longer.
  taskTimeoutMs: raisesAboveDefault({ default: DEFAULT_TASK_TIMEOUT_MS }),
  // A call holds a worker's tool slot as long as its timeouts let it, and a server's question as long as it waits.
  toolTimeoutMs: raisesAboveDefault({ default: DEFAULT_TOOL_TIMEOUT_MS }),
  maxTotalTimeoutMs: (next, current) => next !== null && next > Math.max(current ?? 0, DEFAULT_MAX_TOTAL_TIMEOUT_MS),
  elicitationTimeoutMs: raisesAboveDefault({ default: DEFAULT_ELICITATION_TIMEOUT_MS }),
  // How many of a worker's tool slots the integration's calls may hold at once.
  maxConcurrentCalls: raisesAboveDefault(CONCURRENT_CALLS),
  maxResultBytes: raisesAboveDefault(SIZE_BOUNDS.maxResultBytes),
  maxResourceBytes: raisesAboveDefault(SIZE_BOUNDS.maxResourceBytes),
} satisfies { [K in keyof Integration]?: Widens<K> };

type AdminSetting = keyof typeof ADMIN_SETTINGS;

/** Settings a request names otherwise than they are stored (a duration as text). */
const REQUEST_NAMES: Partial<Record<AdminSetting, string>> = { taskTimeoutMs: 'taskTimeout', elicitationTimeoutMs: 'elicitationTimeout' };

/**
 * The admin-only settings given in `next` (absent ones are left out) that change `current` as only
 * the operator may, by the names requests give them.
 */
export function adminSettingsChanged(next: Partial<Pick<Integration, AdminSetting>>, current?: Pick<Integration, AdminSetting>): string[] {
  return (Object.keys(ADMIN_SETTINGS) as AdminSetting[]).filter((field) => {
    const widens = ADMIN_SETTINGS[field] as (n: unknown, c: unknown) => boolean;
    return next[field] !== undefined && widens(next[field], current?.[field]);
  }).map((field) => REQUEST_NAMES[field] ?? field);
}

const SETTINGS_ELSEWHERE = "these settings can also be given in the operator's INTEGRATIONS_FILE";
const STDIO_ELSEWHERE = "stdio servers can also be listed in the operator's INTEGRATIONS_FILE";

/** One 403 naming every admin-only setting (`fields`, as the request names them) that a request would change. */
export function requireAdminForSettings(caller: Caller, fields: string[]): void {
  if (fields.length > 0) requireAdmin(caller, fields.join(', '), SETTINGS_ELSEWHERE);
}

/** A stdio server is a command a worker runs: only the operator decides that. `what` names it in the 403. */
export function requireAdminForStdio(caller: Caller, what: string): void {
  requireAdmin(caller, what, STDIO_ELSEWHERE);
}

export function requireAdminForIntegrationName(caller: Caller, names: OperatorNames, name: string, field: string): void {
  requireAdminForName(caller, names, { kind: 'integration', name, field });
}
