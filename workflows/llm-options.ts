/**
 * The bounds of every activity that asks the model (an LLM turn, a sampling answer): it heartbeats
 * while it waits, so a dead worker is noticed within the heartbeat timeout; retryable provider
 * failures are retried a few times, with a server's Retry-After as the next delay.
 */
export const llmOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '15s',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 6 },
} as const;
