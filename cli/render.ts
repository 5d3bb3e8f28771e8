import type { NameOf } from './names';
import type { Output } from './progress';
import type { RunView } from '../core/run-view';

export interface RunSummary {
  id: string; threadId: string; agentId: string; status: string; stopReason: string | null;
  turns: number | null; createdAt: string; endedAt: string | null;
}

export interface RunPage { runs: RunSummary[]; nextCursor: string | null }

/** Columns padded to their widest cell, so the list reads as a table and still splits on spaces. */
export function table(out: Output, rows: string[][]): void {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const row of rows) out.write(`${row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join('  ')}\n`);
}

export function printRunList(out: Output, runs: RunSummary[], agentName: NameOf): void {
  if (runs.length === 0) {
    out.write('no runs\n');
    return;
  }
  table(out, [
    ['ID', 'STATUS', 'STOP', 'TURNS', 'CREATED', 'THREAD', 'AGENT'],
    ...runs.map((r) => [
      r.id, r.status, r.stopReason ?? '-', r.turns === null ? '-' : String(r.turns), r.createdAt, r.threadId, agentName(r.agentId),
    ]),
  ]);
}

/** A run; its agent's id beside the name (the commands that act on it take either). */
export function printRun(out: Output, run: RunView, names: { agent: NameOf; integration: NameOf }): void {
  const agentName = names.agent(run.agentId);
  const lines = [
    `id:       ${run.id}`,
    `thread:   ${run.threadId}`,
    `agent:    ${agentName === run.agentId ? run.agentId : `${agentName} (${run.agentId})`}`,
    ...(run.parentRunId ? [`parent:   ${run.parentRunId}${run.parentToolCallId ? ` (tool call ${run.parentToolCallId})` : ''}`] : []),
    `status:   ${run.status}${run.stopReason ? ` (${run.stopReason})` : ''}`,
    `turns:    ${run.turns}`,
    `usage:    ${run.usage.inputTokens} in / ${run.usage.outputTokens} out tokens`,
    `created:  ${run.createdAt}`,
    `ended:    ${run.endedAt ?? '-'}`,
  ];
  if (run.error) lines.push(`error:    ${run.error.type}: ${run.error.message}`);
  if (run.toolCalls.length > 0) {
    lines.push('tool calls:');
    for (const c of run.toolCalls) {
      const integration = c.integrationId ? ` [${names.integration(c.integrationId)}]` : '';
      lines.push(`  turn ${c.turn}  ${c.name}${integration}  ${c.status}  ${c.durationMs} ms  ${c.resultBytes} bytes`);
      if (c.arguments !== undefined) lines.push(...labelled('arguments', c.arguments, c.argumentsBytes ?? 0));
      lines.push(...labelled('result', c.result, c.resultBytes));
      // A sub-agent's call: the run it started (agent-engine runs list --parent lists them all).
      if (c.childRunId) lines.push(`    child run: ${c.childRunId}`);
    }
  }
  if (run.output !== null) lines.push('output:', run.output);
  out.write(`${lines.join('\n')}\n`);
}

/** A text under a label, indented, with a note when it is only the first part of something larger. */
export function labelled(label: string, text: string, fullBytes: number, indent = '    '): string[] {
  const shown = Buffer.byteLength(text);
  const note = shown < fullBytes ? ` (first ${shown} of ${fullBytes} bytes)` : '';
  const [first = '', ...rest] = text.split('\n');
  return [`${indent}${label}${note}: ${first}`, ...rest.map((l) => `${indent}  ${l}`)];
}
