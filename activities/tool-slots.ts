import { CONCURRENT_CALLS } from '../core/integration';
import type { BusyIntegration } from '../core/tool-call';
import type { Db } from '../store/pool';
import { toolCallSlotCaps } from '../store/tenant-limits';

/** how long a worker trusts the tenants' tool-call caps it read */
const TENANT_CAPS_MAX_AGE_MS = 5_000;

/** The tenants' caps on their tool calls per worker (toolCallSlots), read at most every 5 s. */
export class TenantSlotCaps {
  private caps = new Map<string, number>();
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | undefined;

  constructor(private readonly db: Db, private readonly maxAgeMs = TENANT_CAPS_MAX_AGE_MS) {}

  async capOf(tenantId: string): Promise<number | undefined> {
    if (Date.now() - this.readAt >= this.maxAgeMs) {
      this.reading ??= this.read().finally(() => {
        this.reading = undefined;
      });
      await this.reading;
    }
    return this.caps.get(tenantId);
  }

  private async read(): Promise<void> {
    this.caps = await toolCallSlotCaps(this.db);
    this.readAt = Date.now();
  }
}

type Release = () => void;

/** Counts taken slots by key, each slot given back once. */
class Counter {
  private readonly running = new Map<string, number>();

  count(key: string): number {
    return this.running.get(key) ?? 0;
  }

  take(key: string): Release {
    this.running.set(key, this.count(key) + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = this.count(key) - 1;
      if (left > 0) this.running.set(key, left);
      else this.running.delete(key);
    };
  }
}

/**
 * How many calls of each integration, and of each capped tenant's runs, this worker process runs
 * at once. A call that finds its slots all taken does not wait inside its activity (it would hold
 * one of the worker's tool slots, and a server that hangs would take them all): its activity ends
 * at once with `busy`, and the workflow dispatches it again after a pause (workflows/call-tool.ts).
 */
export class ToolSlots {
  private readonly integrations = new Counter();
  private readonly tenants = new Counter();
  /** the limit each integration's last routed call carried: native tools (resources, prompts) count against it too */
  private readonly limits = new Map<string, number>();

  /** `tenantCaps`: the tenants' caps (toolCallSlots); without it, tenants are not capped */
  constructor(private readonly tenantCaps?: TenantSlotCaps) {}

  /** A slot of the integration's, and the function that gives it back; undefined when none is free. */
  take(integrationId: string, limit?: number): Release | undefined {
    if (limit !== undefined) this.limits.set(integrationId, limit);
    const max = limit ?? this.limits.get(integrationId) ?? CONCURRENT_CALLS.default;
    return this.integrations.count(integrationId) < max ? this.integrations.take(integrationId) : undefined;
  }

  /** What the workflow is told when no slot of the integration was free. */
  busy(integrationId: string, integrationName: string): BusyIntegration {
    return { integrationName, maxConcurrentCalls: this.limits.get(integrationId) ?? CONCURRENT_CALLS.default };
  }

  /**
   * A slot of the tenant's, when it has a cap: its release, or what the workflow is told when none
   * is free. A call of a tenant without a cap (or of a run from before tenants) takes none.
   */
  async takeTenant(tenantId: string | undefined): Promise<{ release: Release } | { busy: BusyIntegration }> {
    const cap = tenantId === undefined ? undefined : await this.tenantCaps?.capOf(tenantId);
    if (tenantId === undefined || cap === undefined) return { release: () => undefined };
    if (this.tenants.count(tenantId) >= cap) return { busy: { integrationName: '', maxConcurrentCalls: cap, tenantToolCallSlots: cap } };
    return { release: this.tenants.take(tenantId) };
  }
}
