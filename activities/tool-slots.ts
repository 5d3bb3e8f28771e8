import { CONCURRENT_CALLS } from '../core/integration';
import type { BusyIntegration } from '../core/tool-call';

/**
 * How many calls of each integration this worker process runs at once. A call that finds its
 * integration's slots all taken does not wait inside its activity (it would hold one of the
 * worker's tool slots, and a server that hangs would take them all): its activity ends at once
 * with `busy`, and the workflow dispatches it again after a pause (workflows/call-tool.ts).
 */
export class ToolSlots {
  private readonly running = new Map<string, number>();
  /** the limit each integration's last routed call carried: native tools (resources, prompts) count against it too */
  private readonly limits = new Map<string, number>();

  /** A slot of the integration's, and the function that gives it back; undefined when none is free. */
  take(integrationId: string, limit?: number): (() => void) | undefined {
    if (limit !== undefined) this.limits.set(integrationId, limit);
    const max = limit ?? this.limits.get(integrationId) ?? CONCURRENT_CALLS.default;
    const now = this.running.get(integrationId) ?? 0;
    if (now >= max) return undefined;
    this.running.set(integrationId, now + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.running.get(integrationId) ?? 1) - 1;
      if (left > 0) this.running.set(integrationId, left);
      else this.running.delete(integrationId);
    };
  }

  /** What the workflow is told when no slot was free. */
  busy(integrationId: string, integrationName: string): BusyIntegration {
    return { integrationName, maxConcurrentCalls: this.limits.get(integrationId) ?? CONCURRENT_CALLS.default };
  }
}
