import { MAX_DESCENDANTS, subAgentText } from '../../core/sub-agents';
import { childRunIds } from '../../platform/ids';
import { insertChildRun } from '../../store/sub-agents';
import { appendEvent } from '../../store/runs/events';
import { MAX_RUN_INPUT_CHARS } from '../../core/run';
import type { ToolHandler } from '../tool-handler';

interface Request {
  input: string;
}

/**
 * A sub-agent's call (`agent__<name>`, `{input}`): its run is recorded on a new thread of the
 * sub-agent, with the parent's run and call; the workflow then runs it as a child workflow and
 * records what it answered (workflows/sub-agent.ts). A retried activity finds the run it recorded.
 */
export const subAgentCall: ToolHandler<Request> = {
  span: () => 'sub_agent_call',
  async check(args, input) {
    const text = args.input;
    if (typeof text !== 'string' || !text.trim() || text.length > MAX_RUN_INPUT_CHARS) {
      return { status: 'error', content: subAgentText.badInput(input.name) };
    }
    return { request: { input: text }, logFields: { subAgent: input.subAgent?.agentName } };
  },
  logFields: () => ({}),
  async execute({ input: text }, { input, deps }) {
    const route = input.subAgent;
    if (!route) return { status: 'error', content: subAgentText.failed(input.name, 'not a sub-agent of this run') };
    const ids = childRunIds(input.runId, input.toolCallId);
    const child = await insertChildRun(deps.db, {
      ...ids, parentRunId: input.runId, parentToolCallId: input.toolCallId, rootRunId: route.rootRunId, agentId: route.agentId, input: text,
      maxDescendants: route.maxDescendants ?? MAX_DESCENDANTS,
    });
    if ('refused' in child) {
      const content = child.refused === 'full'
        ? subAgentText.tooMany(route.maxDescendants ?? MAX_DESCENDANTS)
        : subAgentText.failed(route.agentName, 'the agent is disabled');
      return { status: 'error', content };
    }
    // Between the call's tool_call_started and tool_call_ended (core/tool-call.ts endedSeqOf).
    if (input.childEvents) {
      await appendEvent(deps.db, input.runId, input.eventSeq + 1, 'child_run_started', {
        toolCallId: input.toolCallId, childRunId: child.runId, threadId: child.threadId, agentId: child.agentId, agentName: route.agentName,
      });
    }
    return { status: 'ok', content: '', child };
  },
};
