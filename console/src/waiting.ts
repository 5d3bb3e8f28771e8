import { budgetWords } from './budget';
import type { PendingApproval, PendingCallerTool, PendingInput, RunView } from './types';

/** What a run waits for, in words a person reads on the runs page. */
export function waitingWords(run: Pick<RunView, 'pendingApprovals' | 'pendingInputs' | 'pendingBudget' | 'pendingCallerTools'>): string[] {
  return [
    ...run.pendingApprovals.map(approvalWords),
    ...run.pendingInputs.map(inputWords),
    ...(run.pendingBudget ? [budgetWords(run.pendingBudget)] : []),
    ...(run.pendingCallerTools ?? []).map(callerToolWords),
  ];
}

export const callerToolWords = (call: Pick<PendingCallerTool, 'name'>): string =>
  `Waiting for its caller to run the tool ${call.name}`;

export const approvalWords = (approval: PendingApproval): string => (approval.kind === 'sampling'
  ? `Waiting for approval: a server asks to use the model during ${approval.name}`
  : `Waiting for approval of the tool call ${approval.name}`);

export const inputWords = (input: PendingInput): string => (input.mode === 'url'
  ? `Waiting for a person to complete a server's request at a web address: ${input.message}`
  : `Waiting for an answer to a server's question: ${input.message}`);
