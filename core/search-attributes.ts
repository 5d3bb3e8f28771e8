import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

/** Registered on the Temporal namespace; used to list runs by thread, agent and status. */
export const threadIdKey = defineSearchAttributeKey('threadId', SearchAttributeType.KEYWORD);
export const agentIdKey = defineSearchAttributeKey('agentId', SearchAttributeType.KEYWORD);
export const runStatusKey = defineSearchAttributeKey('RunStatus', SearchAttributeType.KEYWORD);
/**
 * The run's tenant, set in the start options of every run, sub-agent run and continuation (never
 * upserted): `GET /v1/runs` lists the caller's tenant's runs only. Runs started before it have none;
 * they are the tenant `default`'s (core/tenancy.ts).
 */
export const tenantIdKey = defineSearchAttributeKey('TenantId', SearchAttributeType.KEYWORD);

/**
 * What the run waits for from a person: `approval` (a tool call waits for a decision; it wins when
 * both wait), `input` (an MCP server's question waits for an answer), `budget` (a reached limit
 * waits for a person to raise it or stop the run: limits.onLimit "ask") or `caller_tool` (a call of
 * a tool its caller runs waits for the caller's answer); unset when it waits for none.
 */
export const waitingForKey = defineSearchAttributeKey('waitingFor', SearchAttributeType.KEYWORD);
export type WaitingFor = 'approval' | 'input' | 'budget' | 'caller_tool';
export const WAITING_FOR_VALUES: WaitingFor[] = ['approval', 'input', 'budget', 'caller_tool'];

/**
 * What a run's workflow starts with (a run, a sub-agent's run, an eval's replay): its thread, agent,
 * status (`running` until it ends: runWorkflow upserts it) and tenant.
 */
export const runStartAttributes = (run: { threadId: string; agentId: string; tenantId: string }): SearchAttributePair[] => [
  { key: threadIdKey, value: run.threadId },
  { key: agentIdKey, value: run.agentId },
  { key: runStatusKey, value: 'running' },
  { key: tenantIdKey, value: run.tenantId },
];

/**
 * Every attribute the engine writes or lists runs by: the one list the namespace must hold. The
 * worker and the API register what a namespace lacks (platform/temporal/search-attributes.ts), the
 * dev servers are started with them, docker-compose.yml's setup step lists them (a test checks).
 */
export const runSearchAttributeKeys = [threadIdKey, agentIdKey, runStatusKey, waitingForKey, tenantIdKey];

const TYPE_NAMES: Record<SearchAttributeType, string> = {
  TEXT: 'Text', KEYWORD: 'Keyword', INT: 'Int', DOUBLE: 'Double', BOOL: 'Bool', DATETIME: 'Datetime', KEYWORD_LIST: 'KeywordList',
};

/** The type names `temporal server start-dev --search-attribute` and `temporal operator` take. */
export const searchAttributeTypeName = (key: { type: SearchAttributeType }) => TYPE_NAMES[key.type];
