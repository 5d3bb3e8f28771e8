import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { WAITING_FOR_APPROVAL_ATTRIBUTE } from './approval';

/** Registered on the Temporal namespace; used to list runs by thread, agent and status. */
export const threadIdKey = defineSearchAttributeKey('threadId', SearchAttributeType.KEYWORD);
export const agentIdKey = defineSearchAttributeKey('agentId', SearchAttributeType.KEYWORD);
export const runStatusKey = defineSearchAttributeKey('RunStatus', SearchAttributeType.KEYWORD);

/** true while a tool call of the run waits for a person's approval; unset on runs that never waited */
export const waitingForApprovalKey = defineSearchAttributeKey(WAITING_FOR_APPROVAL_ATTRIBUTE, SearchAttributeType.BOOL);

export const runSearchAttributeKeys = [threadIdKey, agentIdKey, runStatusKey, waitingForApprovalKey];

/** The type names `temporal server start-dev --search-attribute` and `temporal operator` take. */
export const searchAttributeTypeName = (key: { type: string }) => (key.type === SearchAttributeType.BOOL ? 'Bool' : 'Keyword');
