import type { Logger } from '../platform/logger';
import type { Caller } from '../use-cases/caller';
import { decideApprovalFor, type ApprovalDeps, type DecideApprovalRequest } from '../use-cases/runs/approvals';
import { answerInputFor, type AnswerDeps, type InputAnswer } from '../use-cases/runs/run-inputs';
import { recordAct, type AuditDeps } from '../use-cases/tenants/audit';

/*
 * Decisions made over /mcp (an approval in an elicitation form or a tasks/update, an answer to a
 * server's question) go to the audit log as the API's routes' do (api/audit-hook.ts): who, what
 * (`MCP approval`, `MCP answer`), the run and its tool call or input, when; after they succeed. A
 * failed write is logged and the decision stands: it is done and cannot be undone.
 */

async function audit(deps: { db: AuditDeps['db']; logger: Logger }, caller: Caller, action: string, target: string): Promise<void> {
  try {
    await recordAct(deps.db, caller, { action, target, address: null });
  } catch (err) {
    deps.logger.error({ err, action }, 'the audit log did not record a decision; the decision itself stands');
  }
}

export async function decideOverMcp(deps: ApprovalDeps & { logger: Logger }, caller: Caller, req: DecideApprovalRequest) {
  const view = await decideApprovalFor(deps, caller, req);
  await audit(deps, caller, 'MCP approval', `${req.runId}/${req.toolCallId}`);
  return view;
}

export async function answerOverMcp(
  deps: AnswerDeps & { db: AuditDeps['db']; logger: Logger }, caller: Caller, runId: string, inputId: string, answer: InputAnswer,
) {
  const answered = await answerInputFor(deps, caller, runId, inputId, answer);
  await audit(deps, caller, 'MCP answer', `${runId}/${inputId}`);
  return answered;
}
