import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure } from '@temporalio/workflow';
import type { RunError } from '../core/run';

/** A failure as the run records it: the innermost cause's type and message. */
export function describeFailure(err: unknown): RunError {
  let cause: unknown = err;
  while ((cause instanceof ActivityFailure || cause instanceof ChildWorkflowFailure) && cause.cause) cause = cause.cause;
  if (cause instanceof ApplicationFailure) return { type: cause.type ?? 'ApplicationFailure', message: cause.message };
  if (cause instanceof Error) return { type: cause.name, message: cause.message };
  return { type: 'Error', message: String(cause) };
}
