import {
  agentListVersion as storedListVersion, listExposedAgents as storedExposedAgents, type ExposedAgent,
} from '../../store/agent-files/file-agents';
import { renderTemplate, type TemplateMessage } from '../../store/agent-files/parse-chatmd';
import type { Queryable } from '../../store/pool';

/*
 * The agents the MCP server offers, as tools and as prompts. They are read on every request, since
 * agents come and go (files synced by another process, agents created through the API).
 */

export type { ExposedAgent, TemplateMessage };

/** Every agent of the tenant that is not deleted, by name: another tenant's agents are never offered. */
export const listExposedAgents = (db: Queryable, tenantId: string): Promise<ExposedAgent[]> => storedExposedAgents(db, tenantId);

/** Changes whenever an agent of the tenant is added, edited, disabled or removed; cheap enough to poll. */
export const agentListVersion = (db: Queryable, tenantId: string): Promise<string> => storedListVersion(db, tenantId);

/**
 * The agent's template as a prompt: as written without `input`; with it, filled in, or followed by
 * it as the last user message (as an agent call starts from it).
 */
export function promptMessages(agent: ExposedAgent, input: string | undefined): TemplateMessage[] {
  if (input === undefined) return agent.template;
  const rendered = renderTemplate(agent.template, input);
  return [...rendered.history, { role: 'user', content: rendered.input }];
}
