import type { PendingApproval, PendingInput, RunView } from './types';

/** What a run waits for, in words a person reads on the runs page. */
export function waitingWords(run: Pick<RunView, 'pendingApprovals' | 'pendingInputs'>): string[] {
  return [
    ...run.pendingApprovals.map(approvalWords),
    ...run.pendingInputs.map(inputWords),
  ];
}

export const approvalWords = (approval: PendingApproval): string => (approval.kind === 'sampling'
  ? `Waiting for approval: a server asks to use the model during ${approval.name}`
  : `Waiting for approval of the tool call ${approval.name}`);

export const inputWords = (input: PendingInput): string => (input.mode === 'url'
  ? `Waiting for a person to complete a server's request at a web address: ${input.message}`
  : `Waiting for an answer to a server's question: ${input.message}`);
