import type { ToolCall } from '../core/messages';
import { refusedCallSeq } from '../core/tool-call';
import { tooManyToolCallsText } from '../core/tool-texts';
import type { DiscoverySnapshot } from './run-snapshots';
import { refusedCallWrites } from '../store/runs/refused-calls';
import type { Write } from '../store/runs/writes';

/**
 * A turn runs at most its limit of tool calls (limits.maxToolCallsPerTurn), the first in the
 * model's order. The LLM turn's activity answers each later one itself, with the contract text,
 * in the statement that writes the reply: so the workflow gets at most that many calls, whatever
 * the model asked (Temporal refuses more than 2,000 activities pending at once; a turn's calls run
 * together), and the next turn's transcript has a result for every call.
 */

/** A tool the turn offered, as the run object shows a call of it: its kind, and an MCP tool's integration. */
export interface OfferedTool { type: string; integrationId?: string }

/** The tools a turn offered by name: its integrations' tools, the native tools, sub-agents and caller tools it offered. */
export function offeredTools(
  integrations: DiscoverySnapshot['integrations'], natives: { name: string; type: string }[], subAgents: string[],
  callerTools: string[] = [],
): Map<string, OfferedTool> {
  const offered = new Map<string, OfferedTool>();
  for (const i of integrations) {
    if (i.status === 'ok') for (const name of i.exposedToolNames) offered.set(name, { type: 'mcp_tool', integrationId: i.id });
  }
  for (const n of natives) offered.set(n.name, { type: n.type });
  for (const name of subAgents) offered.set(name, { type: 'sub_agent' });
  for (const name of callerTools) offered.set(name, { type: 'caller_tool' });
  return offered;
}

/** What answers the calls past `limit`, none when there are none; their events take the numbers after the turn's. */
export function refusedCallsWrites(
  at: { runId: string; turn: number; eventSeq: number }, calls: ToolCall[], limit: number, offered: () => Map<string, OfferedTool>,
): Write[] {
  if (calls.length <= limit) return [];
  const tools = offered();
  const refused = calls.slice(limit).map((call, i) => {
    const tool = tools.get(call.name);
    return {
      slot: limit + i + 1, id: call.id, name: call.name, type: tool?.type ?? 'unknown', integrationId: tool?.integrationId ?? null,
      seq: refusedCallSeq(at.eventSeq, i),
    };
  });
  return refusedCallWrites(at.runId, at.turn, refused, tooManyToolCallsText(limit));
}
