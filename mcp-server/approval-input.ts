import {
  CLIENT_CAPABILITIES_META_KEY, createRequestStateCodec, inputRequired, inputResponse,
} from '@modelcontextprotocol/server';
import type { ClientCapabilities, InputRequiredResult, ServerContext } from '@modelcontextprotocol/server';
import type { ApprovalDecision } from '../core/approval';
import { firstPendingApproval, type ApprovalDeps } from '../use-cases/runs/approvals';
import { decideOverMcp } from './audited-decisions';
import type { Logger } from '../platform/logger';
import type { Caller } from '../use-cases/caller';
import { approvalForm, decisionOf } from './approval-elicitation';
import { clientError } from './engine-errors';

/**
 * Approvals asked of a 2026-era client (multi-round-trip requests): the call returns `input_required`
 * with a form (approve or deny, and a reason) and a signed requestState naming the run and the tool
 * call; the client's retry carries the answer, which is applied like a REST decision (`mcp_client`),
 * and the retry goes on following the same run. The state is only integrity-protected, not secret:
 * it holds ids and nothing else.
 */

/** What the requestState holds: the run and the tool call asked about. */
export interface ApprovalState {
  runId: string;
  toolCallId: string;
}

/** The key of the form in inputRequests (and of its answer in the retry's inputResponses). */
const FORM_KEY = 'approval';
/** A state outlives the approval's timeout by this much, so that an answer sent just in time still verifies. */
const TTL_MARGIN_S = 60;
const REASON_CHARS = 1_000;

export interface ApprovalQuestions {
  /** the hook for ServerOptions.requestState.verify: a bad MAC, an expired or a rebound state throws */
  verify: (state: string, ctx: ServerContext) => Promise<ApprovalState>;
  /** input_required for the run's first pending approval other than `skip`; undefined when none waits */
  ask: (runId: string, ctx: ServerContext, skip?: string) => Promise<InputRequiredResult | undefined>;
  /** applies the retry's answer; false when the form was dismissed (the call then waits for another decision) */
  answer: (state: ApprovalState, ctx: ServerContext) => Promise<boolean>;
}

/**
 * `keyKind` names who may echo the state back (the API key kind over HTTP, within its tenant): a
 * state is bound to it and to the method, so that it is refused when echoed with another key or on
 * another method. An answer is recorded as `caller`'s decision.
 */
export function approvalQuestions(
  deps: ApprovalDeps & { logger: Logger }, key: Buffer, keyKind: string, caller: Caller,
): ApprovalQuestions {
  const bind = (ctx: ServerContext) => `${keyKind}\0${ctx.mcpReq.method}`;
  const verifier = createRequestStateCodec<ApprovalState>({ key, bind });
  return {
    verify: (state, ctx) => verifier.verify(state, ctx),

    async ask(runId, ctx, skip) {
      const pending = await firstPendingApproval(deps.db, runId, skip);
      if (!pending) return undefined;
      // Valid at least as long as the approval can still be decided.
      const ttlSeconds = Math.max(0, Math.ceil((Date.parse(pending.expiresAt) - Date.now()) / 1000)) + TTL_MARGIN_S;
      const codec = createRequestStateCodec<ApprovalState>({ key, bind, ttlSeconds });
      return inputRequired({
        inputRequests: { [FORM_KEY]: inputRequired.elicit(approvalForm(pending.name, pending.arguments)) },
        requestState: await codec.mint({ runId, toolCallId: pending.toolCallId }, ctx),
      });
    },

    async answer(state, ctx) {
      const view = inputResponse(ctx.mcpReq.inputResponses, FORM_KEY);
      const content = view.kind === 'elicit' ? view.content as Record<string, string> | undefined : undefined;
      const answer = view.kind === 'elicit' ? decisionOf({ action: view.action, content }) : undefined;
      if (!answer) return false;
      try {
        const { runId, toolCallId } = state;
        await decideOverMcp(deps, caller, { runId, toolCallId, ...bounded(answer), keyKind: 'mcp_client' });
      } catch (err) {
        throw clientError(err);
      }
      return true;
    },
  };
}

const bounded = (a: { decision: ApprovalDecision; reason?: string }) => (a.reason ? { ...a, reason: a.reason.slice(0, REASON_CHARS) } : a);

/** What a 2026-era request's client declared in the request's own _meta envelope. */
export const requestCapabilities = (ctx: ServerContext): ClientCapabilities | undefined =>
  (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined;

/** Whether a 2026-era request's client can be asked a form: it declared form elicitation in the request's _meta. */
export function declaresFormElicitation(ctx: ServerContext): boolean {
  const elicitation = requestCapabilities(ctx)?.elicitation as Record<string, unknown> | undefined;
  // An empty elicitation capability means form mode (the spec's default).
  return elicitation !== undefined && (elicitation.form !== undefined || Object.keys(elicitation).length === 0);
}
