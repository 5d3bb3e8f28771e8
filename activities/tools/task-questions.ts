import { createHash } from 'node:crypto';
import type { InputRequiredResult } from '@modelcontextprotocol/client';
import type { Integration } from '../../core/integration';
import { toolResultText } from '../../core/tool-texts';
import { refusal } from '../../mcp-client/tool-calls/input-rounds';
import { callRoundCount } from '../../store/runs/input-rounds';
import { recordToolTaskAsked, type StoredToolTask } from '../../store/runs/tool-tasks';
import type { ActivityDeps } from '../deps';
import type { ToolActivityInput, ToolResult } from '../tool-handler';
import { storeQuestions } from './durable-questions';

/**
 * A 2026-era task that asks questions (`input_required` with `inputRequests`): they become a round
 * of the run, as a call's questions do (durable-questions.ts), and the workflow waits for their
 * answers with no activity running; then the answers go to the task (tasks/update) and polling
 * goes on. What the integration does not relay (elicitation off, sampling never) ends the call.
 */

const digest = (requests: unknown) => createHash('sha256').update(JSON.stringify(requests)).digest('hex');

/** The same questions seen again after their round was relayed: the server has not moved on yet. */
export const askedAlready = (task: StoredToolTask, requests: Record<string, unknown>) => task.lastAsked === digest(requests);

export async function storeTaskQuestions(
  deps: ActivityDeps, input: ToolActivityInput, task: StoredToolTask, integration: Integration, requests: Record<string, unknown>,
): Promise<ToolResult> {
  const asked = { resultType: 'input_required', inputRequests: requests } as unknown as InputRequiredResult;
  const refused = refusal(asked, { sampling: integration.sampling !== 'never' });
  if (refused) return { status: 'error', content: refused };
  const elicits = Object.values(requests).some((r) => (r as { method?: unknown })?.method === 'elicitation/create');
  if (elicits && !integration.elicitation) return { status: 'error', content: toolResultText.mcpQuestionUnsupported('elicitation/create') };
  const log = deps.logger.child({ runId: input.runId, toolCallId: input.toolCallId, taskRefId: task.taskRefId });
  const round = (await callRoundCount(deps.db, input.runId, input.toolCallId)) + 1;
  const result = await storeQuestions({ input, deps, log }, integration, asked, round);
  if (result.waiting) await recordToolTaskAsked(deps.db, task.taskRefId, digest(requests));
  return result;
}

