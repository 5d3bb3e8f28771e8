import type { Db } from '../core/db/pool';
import type { LlmProviders } from '../core/llm/types';
import type { Logger } from '../core/logger';

/** What activities receive from the worker's composition root. */
export interface ActivityDeps {
  db: Db;
  logger: Logger;
  providers: LlmProviders;
}
