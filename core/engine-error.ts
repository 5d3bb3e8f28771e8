/** One error type with a code; the API maps codes to HTTP statuses. */
export type EngineErrorCode = 'not_found' | 'conflict' | 'thread_busy' | 'agent_disabled' | 'invalid';

export class EngineError extends Error {
  override name = 'EngineError';
  constructor(readonly code: EngineErrorCode, message: string) {
    super(message);
  }
}
