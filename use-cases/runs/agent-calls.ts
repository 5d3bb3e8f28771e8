import { EngineError } from '../../core/engine-error';
import { MAX_RUN_INPUT_CHARS } from '../../core/run';
import { seedThreadMessages, type ExposedAgent } from '../../store/agent-files/file-agents';
import { renderTemplate } from '../../store/agent-files/parse-chatmd';
import { findAgent } from '../../store/agents';
import { inTransaction, type Db } from '../../store/pool';
import { unstorableReason } from '../../store/storable-text';
import { findTenantThread, insertThread } from '../../store/threads/threads';

/** Where an agent called as a tool (by an MCP client) runs, and what it is asked. */
export interface AgentCallThread {
  threadId: string;
  input: string;
  /** the thread's own agent, when the call runs on another agent's thread (the answer says so) */
  threadOwner?: { id: string; name: string };
}

const refused = (message: string) => new EngineError('validation', message);

/**
 * The start of an agent call, before its run: the arguments checked (validation), then the thread
 * it names (not_found when there is none), or a new one seeded with the agent's template, the
 * input filled in. The agent called runs on another agent's thread when asked to, as
 * POST /v1/threads/:id/runs with agentId does; the thread stays its own agent's.
 */
export async function prepareAgentCall(
  db: Db, tenantId: string, agent: ExposedAgent, args: Record<string, unknown>,
): Promise<AgentCallThread> {
  if (typeof args.input !== 'string') throw refused('The "input" argument is required and must be a string');
  if (args.input.length > MAX_RUN_INPUT_CHARS) throw refused(`The "input" argument must be at most ${MAX_RUN_INPUT_CHARS} characters`);
  const unstorable = unstorableReason(args.input);
  if (unstorable) throw refused(`The "input" argument contains ${unstorable}`);
  if (args.threadId !== undefined && typeof args.threadId !== 'string') throw refused('The "threadId" argument must be a string');
  if (!args.threadId) return newThreadFor(db, tenantId, agent, args.input);
  // Another tenant's thread answers as an unknown one.
  const thread = await findTenantThread(db, tenantId, args.threadId);
  if (!thread) throw new EngineError('not_found', `Thread ${args.threadId} does not exist`);
  if (thread.agentId === agent.id) return { threadId: thread.id, input: args.input };
  const owner = (await findAgent(db, thread.agentId)) ?? { id: thread.agentId, name: thread.agentId };
  return { threadId: thread.id, input: args.input, threadOwner: { id: owner.id, name: owner.name } };
}

async function newThreadFor(db: Db, tenantId: string, agent: ExposedAgent, input: string): Promise<AgentCallThread> {
  const rendered = renderTemplate(agent.template, input);
  const threadId = await inTransaction(db, async (tx) => {
    const thread = await insertThread(tx, agent.id, {}, tenantId);
    await seedThreadMessages(tx, thread.id, rendered.history);
    return thread.id;
  });
  return { threadId, input: rendered.input };
}
