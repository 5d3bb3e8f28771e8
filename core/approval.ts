import { parseDuration } from './duration';

/**
 * Approval of tool calls: the policy an integration sets, what the workflow needs to wait for a
 * decision, and the exact texts the LLM reads when a call is not approved (contract). Pure, so
 * that workflow code may import it.
 */

export type ApprovalRule = 'never' | 'always';
export type ApprovalDefault = ApprovalRule | 'unless_read_only';

/** An integration's approval policy; absent: its tools never ask. */
export interface ApprovalPolicy {
  default: ApprovalDefault;
  /** per tool (the MCP server's own tool name), overriding the default */
  tools?: Record<string, ApprovalRule>;
  /** how long a call waits for a decision, e.g. "90s", "30m", "24h" (the default) */
  timeout?: string;
}

export const DEFAULT_APPROVAL_TIMEOUT = '24h';

/** On a route whose calls wait for a person's decision before they run. */
export interface ApprovalRequirement {
  timeoutMs: number;
  /** the timeout as configured, for the text the LLM reads when it passes */
  timeout: string;
}

export type ApprovalDecision = 'approve' | 'deny';
/** How a pending approval ended. */
export type ApprovalStatus = 'approved' | 'denied' | 'timed_out' | 'cancelled';
/** How each ending is said to people (409 problems, progress messages, update failures). */
export const APPROVAL_STATUS_WORDS: Record<ApprovalStatus, string> = {
  approved: 'approved', denied: 'denied', timed_out: 'not approved in time', cancelled: 'cancelled with its run',
};
/** Who ended it: a person through the API, the timeout, or the run's cancellation. */
export type ApprovalResolver = 'api' | 'timeout' | 'cancel';
/**
 * Which key the deciding request carried; `none` when the API has no keys (loopback development);
 * `mcp_client` when the user of the MCP client that started the run answered its question
 * (elicitation over stdio, or a 2026-era input_required).
 */
export type ApprovalKeyKind = 'api' | 'admin' | 'none' | 'mcp_client';

/** The run workflow's update that decides a pending approval. */
export const DECIDE_APPROVAL_UPDATE = 'decideApproval';

/** Who decided an approval or answered a question: the caller's principal (an API key's id and name, the operator, …). */
export interface DecidedBy {
  principalId: string;
  name: string;
}

export interface DecideApprovalInput {
  toolCallId: string;
  decision: ApprovalDecision;
  reason?: string;
  keyKind: ApprovalKeyKind;
  /** absent: a decision through /mcp, or from a build that did not send it */
  decidedBy?: DecidedBy;
}

/** The failure type the decision update answers with; the API maps it to 409. (An unknown call is the API's 404, from PostgreSQL.) */
export const APPROVAL_FAILURE = {
  alreadyDecided: 'ApprovalAlreadyDecided',
} as const;

/** What the LLM reads when a call is not approved (contract, exact). */
export const approvalText = {
  denied: (reason?: string) => (reason ? `Tool call denied by a reviewer: ${reason}` : 'Tool call denied by a reviewer.'),
  timedOut: (timeout: string) => `Tool call not approved within ${timeout}.`,
};

export const MIN_APPROVAL_TIMEOUT_MS = 1_000;
export const MAX_APPROVAL_TIMEOUT_MS = 365 * 86_400_000;

/** "90s", "30m", "24h", "7d" → milliseconds; undefined when it is not such a duration or out of bounds. */
export function parseApprovalTimeout(text: string): number | undefined {
  const ms = parseDuration(text);
  return ms !== undefined && ms >= MIN_APPROVAL_TIMEOUT_MS && ms <= MAX_APPROVAL_TIMEOUT_MS ? ms : undefined;
}

/**
 * Whether calls of a tool wait for approval. `unless_read_only` trusts `readOnlyHint` only from an
 * integration whose annotations are trusted; otherwise every tool asks.
 */
export function approvalRequirement(
  policy: ApprovalPolicy | null | undefined,
  tool: { name: string; readOnlyHint?: boolean },
  trustAnnotations: boolean,
): ApprovalRequirement | undefined {
  if (!policy) return undefined;
  const rule = policy.tools?.[tool.name] ?? policy.default;
  const asks = rule === 'always' || (rule === 'unless_read_only' && !(trustAnnotations && tool.readOnlyHint === true));
  if (!asks) return undefined;
  const timeout = policy.timeout ?? DEFAULT_APPROVAL_TIMEOUT;
  return { timeout, timeoutMs: parseApprovalTimeout(timeout) ?? parseApprovalTimeout(DEFAULT_APPROVAL_TIMEOUT)! };
}
