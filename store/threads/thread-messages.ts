import type { Queryable } from '../pool';

/**
 * A thread's conversation as a person reads it. Tool results and tool-call arguments can be
 * megabytes: they are cut in SQL, so a page never loads more than its previews, and each cut
 * text says how large it really is.
 */

/** characters of a message's content, or of a tool call's arguments (as JSON), shown per message */
export const MESSAGE_PREVIEW_CHARS = 2_000;

export interface ToolCallView {
  id: string;
  name: string;
  /** the arguments as JSON text, cut at MESSAGE_PREVIEW_CHARS characters */
  arguments: string;
  argumentsBytes: number;
  argumentsTruncated: boolean;
}

export interface MessageView {
  seq: number;
  /** the run that wrote the message ('template' for an agent file's template) */
  runId: string;
  /**
   * the agent of that run: a run may be another agent's than the thread's (POST /v1/threads/:id/runs
   * with agentId); a template is the thread's agent's
   */
  agentId: string;
  agentName: string;
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** the full content's size in UTF-8 bytes */
  contentBytes: number;
  contentTruncated: boolean;
  /** assistant messages that call tools */
  toolCalls?: ToolCallView[];
  /** tool results: the call they answer, and the tool's name */
  toolCallId?: string;
  toolName?: string;
  createdAt: string;
}

export interface MessagePage {
  messages: MessageView[];
  /** pass as `after` for the next page; null on the last page */
  nextAfter: number | null;
}

/** What a person reads of a stored message (a ChatMessage), whoever wrote it: a thread's or a run's transcript. */
export type MessagePreview = Pick<
  MessageView, 'role' | 'content' | 'contentBytes' | 'contentTruncated' | 'toolCalls' | 'toolCallId' | 'toolName' | 'createdAt'
>;

export interface MessagePreviewRow {
  role: MessageView['role']; content: string | null; content_chars: number | null; content_bytes: number | null;
  tool_calls: { id: string; name: string; arguments: string; chars: number; bytes: number }[] | null;
  tool_call_id: string | null; tool_name: string | null; created_at: Date;
}

/**
 * The columns toMessagePreview reads, of the row `alias` (with `message` and `created_at`), its
 * texts cut in SQL at the parameter `chars` (MESSAGE_PREVIEW_CHARS).
 */
export const messagePreviewColumns = (alias: string, chars: string) => `${alias}.message->>'role' AS role, ${alias}.created_at,
       left(${alias}.message->>'content', ${chars}) AS content, char_length(${alias}.message->>'content') AS content_chars,
       octet_length(${alias}.message->>'content') AS content_bytes,
       ${alias}.message->>'toolCallId' AS tool_call_id, ${alias}.message->>'name' AS tool_name,
       (SELECT jsonb_agg(jsonb_build_object('id', c->>'id', 'name', c->>'name', 'arguments', left((c->'arguments')::text, ${chars}),
                 'chars', char_length((c->'arguments')::text), 'bytes', octet_length((c->'arguments')::text)) ORDER BY n)
          FROM jsonb_array_elements(
                 CASE WHEN jsonb_typeof(${alias}.message->'toolCalls') = 'array' THEN ${alias}.message->'toolCalls' ELSE '[]' END)
            WITH ORDINALITY AS t(c, n)) AS tool_calls`;

interface Row extends MessagePreviewRow { seq: number; run_id: string; agent_id: string; agent_name: string }

/** Messages of a thread after seq `after`, oldest first. */
export async function pageThreadMessages(db: Queryable, threadId: string, req: { after: number; limit: number }): Promise<MessagePage> {
  const { rows } = await db.query<Row>(
    `SELECT m.seq, m.run_id, a.id AS agent_id, a.name AS agent_name, ${messagePreviewColumns('m', '$3')}
     FROM messages m JOIN threads th ON th.id = m.thread_id
       LEFT JOIN runs r ON r.id = m.run_id JOIN agents a ON a.id = COALESCE(r.agent_id, th.agent_id)
     WHERE m.thread_id = $1 AND m.seq > $2 ORDER BY m.seq LIMIT $4`,
    [threadId, req.after, MESSAGE_PREVIEW_CHARS, req.limit + 1],
  );
  const page = rows.slice(0, req.limit).map(toView);
  return { messages: page, nextAfter: rows.length > req.limit ? page.at(-1)!.seq : null };
}

function toView(r: Row): MessageView {
  return { seq: r.seq, runId: r.run_id, agentId: r.agent_id, agentName: r.agent_name, ...toMessagePreview(r) };
}

export function toMessagePreview(r: MessagePreviewRow): MessagePreview {
  const view: MessagePreview = {
    role: r.role, content: r.content ?? '', contentBytes: r.content_bytes ?? 0,
    contentTruncated: (r.content_chars ?? 0) > MESSAGE_PREVIEW_CHARS, createdAt: r.created_at.toISOString(),
  };
  if (r.tool_calls?.length) {
    view.toolCalls = r.tool_calls.map((c) => ({
      id: c.id, name: c.name, arguments: c.arguments ?? '{}', argumentsBytes: c.bytes ?? 2,
      argumentsTruncated: c.chars > MESSAGE_PREVIEW_CHARS,
    }));
  }
  if (r.role === 'tool') {
    view.toolCallId = r.tool_call_id ?? '';
    view.toolName = r.tool_name ?? '';
  }
  return view;
}
