import type { Migration } from './migration';

export const migration: Migration = {
  version: 2,
  name: 'bounds on tool results',
  sql: `
-- the largest MCP tool response a call accepts; a larger one is refused before it is stored
ALTER TABLE integrations ADD COLUMN max_result_bytes bigint NOT NULL DEFAULT 1048576 CHECK (max_result_bytes > 0);
-- how much of any one tool result the agent's LLM sees (the transcript keeps it whole)
ALTER TABLE agents ADD COLUMN max_tool_result_bytes integer NOT NULL DEFAULT 65536 CHECK (max_tool_result_bytes > 0);
`,
};
