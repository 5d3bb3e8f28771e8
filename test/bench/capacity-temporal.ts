import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/**
 * What the Temporal server keeps of a shape's runs (`npm run bench:capacity`): every workflow
 * execution started since a moment (a run's own, and any other the runs started), each closed
 * by then, with
 *  - its history as the client fetches it: events, and bytes (the History message encoded);
 *  - the server's own figures from DescribeWorkflowExecution: historySizeBytes, and
 *    stateTransitionCount (each time the server persisted a change of the workflow's mutable state:
 *    the unit Temporal Cloud meters and a history shard's write rate is made of).
 */

export interface TemporalFigures {
  workflows: number;
  open: number;
  events: number;
  historyBytes: number;
  serverHistoryBytes: number;
  stateTransitions: number;
  /** the number of each event type, summed over the workflows */
  eventTypes: Record<string, number>;
  workflowTypes: Record<string, number>;
}

async function historyOf(client: Client, workflowId: string, runId: string): Promise<temporal.api.history.v1.IHistoryEvent[]> {
  const events: temporal.api.history.v1.IHistoryEvent[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace, execution: { workflowId, runId }, nextPageToken,
    });
    events.push(...(page.history?.events ?? []));
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return events;
}

async function executionsSince(client: Client, since: Date): Promise<temporal.api.common.v1.IWorkflowExecution[]> {
  const found: temporal.api.common.v1.IWorkflowExecution[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace, query: `StartTime >= "${since.toISOString()}"`, pageSize: 1000, nextPageToken,
    });
    for (const e of page.executions ?? []) if (e.execution) found.push(e.execution);
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return found;
}

const EVENT_TYPE = temporal.api.enums.v1.EventType;

/** The figures of every workflow execution started since `since`, summed. */
export async function temporalFigures(client: Client, since: Date): Promise<TemporalFigures> {
  const figures: TemporalFigures = {
    workflows: 0, open: 0, events: 0, historyBytes: 0, serverHistoryBytes: 0, stateTransitions: 0, eventTypes: {}, workflowTypes: {},
  };
  for (const execution of await executionsSince(client, since)) {
    const { workflowId, runId } = execution;
    const described = await client.workflowService.describeWorkflowExecution({ namespace: client.options.namespace, execution: { workflowId, runId } });
    const info = described.workflowExecutionInfo!;
    const events = await historyOf(client, workflowId!, runId!);
    figures.workflows += 1;
    if (!info.closeTime) figures.open += 1;
    figures.events += events.length;
    figures.historyBytes += temporal.api.history.v1.History.encode({ events }).finish().length;
    figures.serverHistoryBytes += Number(info.historySizeBytes ?? 0);
    figures.stateTransitions += Number(info.stateTransitionCount ?? 0);
    const type = info.type?.name ?? '?';
    figures.workflowTypes[type] = (figures.workflowTypes[type] ?? 0) + 1;
    for (const e of events) {
      const name = (EVENT_TYPE[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');
      figures.eventTypes[name] = (figures.eventTypes[name] ?? 0) + 1;
    }
  }
  return figures;
}
