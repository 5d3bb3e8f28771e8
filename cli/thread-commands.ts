import type { CliContext } from './commands';
import type { Output } from './progress';
import { labelled } from './render';

interface Thread { id: string; agentId: string; createdAt: string }
interface ThreadSummary {
  id: string; agentId: string; agentName: string; messageCount: number; lastMessageAt: string | null; createdAt: string;
}
interface ThreadPage { threads: ThreadSummary[]; nextCursor: string | null }
interface Message {
  seq: number; runId: string; agentId: string; agentName: string; role: string; content: string; contentBytes: number;
  toolCalls?: { id: string; name: string; arguments: string; argumentsBytes: number }[];
  toolCallId?: string; toolName?: string; createdAt: string;
}

const EXIT_OK = 0;
// A conversation longer than this is shown in part, with the command for the rest.
const MAX_PAGES = 50;

const threadLine = (t: ThreadSummary) =>
  `${t.id}  ${t.agentName}  ${t.messageCount} messages  last ${t.lastMessageAt ?? '-'}  created ${t.createdAt}`;

export async function threadsListCommand(
  ctx: CliContext, opts: { agent?: string; limit?: string; cursor?: string; json: boolean },
): Promise<number> {
  const query = new URLSearchParams();
  for (const [key, value] of [['agentId', opts.agent], ['limit', opts.limit], ['cursor', opts.cursor]] as const) {
    if (value) query.set(key, value);
  }
  const page = await ctx.api.get<ThreadPage>(`/v1/threads${query.size ? `?${query}` : ''}`);
  if (opts.json) ctx.out.write(`${JSON.stringify(page, null, 2)}\n`);
  else if (page.threads.length === 0) ctx.out.write('no threads\n');
  else for (const t of page.threads) ctx.out.write(`${threadLine(t)}\n`);
  if (page.nextCursor && !opts.json) ctx.err.write(`more: agent-engine threads list --cursor ${page.nextCursor}\n`);
  return EXIT_OK;
}

/**
 * The whole conversation, page after page: each message with its role, tool calls with their
 * arguments, results cut.
 */
export async function threadsShowCommand(ctx: CliContext, opts: { id: string; json: boolean }): Promise<number> {
  const path = `/v1/threads/${encodeURIComponent(opts.id)}`;
  const thread = await ctx.api.get<Thread>(path);
  const messages: Message[] = [];
  let after: number | null = 0;
  for (let pages = 0; after !== null && pages < MAX_PAGES; pages++) {
    const page: { messages: Message[]; nextAfter: number | null } = await ctx.api.get(`${path}/messages?limit=200&after=${after}`);
    messages.push(...page.messages);
    after = page.nextAfter;
  }
  if (opts.json) ctx.out.write(`${JSON.stringify({ ...thread, messages }, null, 2)}\n`);
  else {
    const agent = await ctx.api.get<{ name: string }>(`/v1/agents/${encodeURIComponent(thread.agentId)}`);
    printConversation(ctx.out, thread, agent.name, messages);
  }
  if (after !== null) ctx.err.write(`${messages.length} messages shown; the rest: GET ${path}/messages?after=${after}\n`);
  return EXIT_OK;
}

/** Each run under a heading naming its agent: a run may be another agent's than the thread's. */
function printConversation(out: Output, thread: Thread, agentName: string, messages: Message[]): void {
  const lines = [`thread ${thread.id} · agent ${agentName} (${thread.agentId}) · created ${thread.createdAt}`];
  if (messages.length === 0) lines.push('', '(no messages yet)');
  let runId = '';
  for (const m of messages) {
    if (m.runId !== runId) {
      runId = m.runId;
      const another = m.agentId === thread.agentId ? '' : ' (not the thread\'s agent)';
      lines.push('', runId === 'template' ? '— the agent\'s template —' : `— run ${runId} · agent ${m.agentName}${another} —`);
    }
    const who = m.role === 'tool' ? `tool ${m.toolName ?? ''} (${m.toolCallId ?? ''})` : m.role;
    if (m.content !== '' || !m.toolCalls) lines.push(...labelled(who, m.content, m.contentBytes, ''));
    for (const c of m.toolCalls ?? []) {
      lines.push(`${m.role} calls ${c.name} (${c.id})`, ...labelled('arguments', c.arguments, c.argumentsBytes, '  '));
    }
  }
  out.write(`${lines.join('\n')}\n`);
}
