import type { Migration } from './migration';

export const migration: Migration = {
  version: 4,
  name: 'thread and agent listing indexes',
  sql: `
-- GET /v1/threads pages newest first, optionally by agent; deleting an agent asks whether threads or runs refer to it
CREATE INDEX threads_created_idx ON threads (created_at DESC, id DESC);
CREATE INDEX threads_agent_created_idx ON threads (agent_id, created_at DESC, id DESC);
CREATE INDEX runs_agent_idx ON runs (agent_id);
`,
};
