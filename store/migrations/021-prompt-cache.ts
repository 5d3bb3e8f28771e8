import type { Migration } from './migration';

export const migration: Migration = {
  version: 21,
  name: 'prompt cache',
  // An integration's promptCacheTtl (mcp-client/prompt-cache.ts): how long a worker keeps the
  // conventional prompts it fetched; NULL, the default, keeps none.
  sql: `
ALTER TABLE integrations ADD COLUMN prompt_cache_ttl_ms integer CHECK (prompt_cache_ttl_ms > 0);
`,
};
