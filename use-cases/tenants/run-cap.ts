import { EngineError } from '../../core/engine-error';
import { NO_TENANT_LIMITS, type TenantLimits } from '../../core/tenancy';
import { inTransaction, type Db, type Queryable } from '../../store/pool';
import { findTenantLimits, lockedRunningRuns } from '../../store/tenant-limits';

/*
 * A tenant's cap on its running runs (maxRunningRuns, docs/security.md "Per-tenant caps"): a start
 * (the API's, /mcp's) beyond it answers too_many_runs (429) and records nothing. A start of a capped
 * tenant records its run in a transaction that holds the tenant's row, so two starts never both take
 * the last place; a tenant without a cap starts as before, in one statement. Sub-agents' runs count
 * and are never refused: their parent was admitted. Replays of an Idempotency-Key are not starts.
 */

/** how long a process trusts the limits it read; the process that changes them forgets them at once */
const LIMITS_MAX_AGE_MS = 5_000;
const CACHE_MAX = 10_000;

/** The tenants' limits as this process last read them, each for at most LIMITS_MAX_AGE_MS. */
export class TenantLimitCache {
  private readonly known = new Map<string, { limits: TenantLimits; readAt: number }>();

  constructor(private readonly db: Db, private readonly maxAgeMs = LIMITS_MAX_AGE_MS) {}

  async of(tenantId: string): Promise<TenantLimits> {
    const known = this.known.get(tenantId);
    if (known && Date.now() - known.readAt < this.maxAgeMs) return known.limits;
    const limits = (await findTenantLimits(this.db, tenantId)) ?? NO_TENANT_LIMITS;
    if (this.known.size >= CACHE_MAX) this.known.clear();
    this.known.set(tenantId, { limits, readAt: Date.now() });
    return limits;
  }

  forget(tenantId: string): void {
    this.known.delete(tenantId);
  }
}

const caches = new WeakMap<Db, TenantLimitCache>();

/** The process's cache of the limits of this database's tenants. */
export function tenantLimitCache(db: Db): TenantLimitCache {
  let cache = caches.get(db);
  if (!cache) {
    cache = new TenantLimitCache(db);
    caches.set(db, cache);
  }
  return cache;
}

export const tooManyRuns = (running: number, cap: number) => new EngineError(
  'too_many_runs',
  `The tenant runs ${running} runs, as many as its cap (maxRunningRuns ${cap}) allows; start again once one has ended`,
  { maxRunningRuns: cap },
);

/**
 * Records a new run of the tenant through `record`, within the tenant's cap: in one statement on
 * `db` when it has none, else under the tenant's lock after counting its running runs.
 */
export async function admitRun<T>(db: Db, tenantId: string, record: (q: Queryable) => Promise<T>): Promise<T> {
  const { maxRunningRuns } = await tenantLimitCache(db).of(tenantId);
  if (maxRunningRuns === null) return record(db);
  return inTransaction(db, async (tx) => {
    const { cap, running } = await lockedRunningRuns(tx, tenantId);
    if (cap !== null && running >= cap) throw tooManyRuns(running, cap);
    return record(tx);
  });
}
