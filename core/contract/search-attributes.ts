import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Registered on the Temporal namespace; used to list runs by thread, agent and status. */
export const threadIdKey = defineSearchAttributeKey('threadId', SearchAttributeType.KEYWORD);
export const agentIdKey = defineSearchAttributeKey('agentId', SearchAttributeType.KEYWORD);
export const runStatusKey = defineSearchAttributeKey('RunStatus', SearchAttributeType.KEYWORD);

export const runSearchAttributeKeys = [threadIdKey, agentIdKey, runStatusKey];
