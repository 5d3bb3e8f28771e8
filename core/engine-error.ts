/** One error type with a code; the API maps codes to HTTP statuses. */
export type EngineErrorCode = 'not_found' | 'conflict' | 'thread_busy' | 'agent_disabled' | 'invalid'
  /** the Temporal namespace lacks search attributes runs start with, and the engine may not add them */
  | 'search_attributes_missing';

export class EngineError extends Error {
  override name = 'EngineError';
  constructor(readonly code: EngineErrorCode, message: string) {
    super(message);
  }
}
