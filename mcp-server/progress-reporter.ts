import type { Logger } from '../platform/logger';
import type { AgentCallContext } from './call-context';

export interface ProgressReporter {
  /** a progress notification at `value` (0 at the start, 1 at the end) */
  send(value: number, message: string): Promise<void>;
  /** the next step's notification, between the last one and 1 */
  step(message: string): Promise<void>;
}

/** Progress must only grow: 0 at start, k/(k+1) for the k-th step, 1 at the end. */
export function progressReporter(ctx: AgentCallContext, logger: Logger): ProgressReporter {
  let steps = 0;
  const send = async (value: number, message: string) => {
    if (!ctx.progress || ctx.signal.aborted) return;
    // A client that cannot take a notification must not lose its answer.
    await ctx.progress(value, message).catch((err: unknown) => logger.debug({ err }, 'progress notification not sent'));
    // The SDK client handles a notification a microtask after reading it but a response at once:
    // a final progress read together with the result is dropped. A short pause keeps them apart.
    if (value === 1) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  return {
    send,
    step: (message: string) => {
      steps += 1;
      return send(steps / (steps + 1), message);
    },
  };
}
