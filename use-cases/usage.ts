import { EngineError } from '../core/engine-error';
import type { Db } from '../store/pool';
import { usageGroups, type UsageGroupBy, type UsageRow } from '../store/usage';
import { requireRole, type Caller } from './caller';
import { tenantFor } from './tenants/tenants';

/*
 * GET /v1/usage (docs/observability.md "Cost"): tokens and spend of completed LLM turns in a time
 * range, grouped by agent, model or tenant; a tenant's principals see their tenant's, the operator
 * every tenant's (or the one `tenantId` names).
 */

const DAY_MS = 86_400_000;
/** groups in one answer; a range with more is cut (and says so) */
const MAX_GROUPS = 1_000;

/** what GET /v1/usage needs */
export interface UsageDeps {
  db: Db;
}

export interface UsageRequest {
  from?: string;
  to?: string;
  groupBy: UsageGroupBy;
  tenantId?: string;
}

export interface UsageReport {
  from: string;
  to: string;
  groupBy: UsageGroupBy;
  groups: UsageRow[];
  /** the sum of every group; priced false when a turn's model had no price */
  total: Omit<UsageRow, 'key' | 'name'>;
  /** more groups than one answer holds: narrow the range */
  truncated: boolean;
}

function timeOf(value: string | undefined, fallback: number, field: string): number {
  if (value === undefined) return fallback;
  const t = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(t)) throw new EngineError('validation', `${field}: an ISO 8601 time`, { field });
  return t;
}

export async function readUsage(db: Db, caller: Caller, req: UsageRequest): Promise<UsageReport> {
  requireRole(caller, 'read');
  const to = timeOf(req.to, Date.now(), 'to');
  const from = timeOf(req.from, to - 30 * DAY_MS, 'from');
  if (from >= to) throw new EngineError('validation', 'from: before to', { field: 'from' });
  const tenantId = req.tenantId !== undefined
    ? (await tenantFor(db, caller, req.tenantId)).id
    : caller.isOperator ? undefined : caller.tenantId;
  const range = { from: new Date(from).toISOString(), to: new Date(to).toISOString() };
  const rows = await usageGroups(db, { groupBy: req.groupBy, ...range, tenantId, limit: MAX_GROUPS + 1 });
  const groups = rows.slice(0, MAX_GROUPS);
  const total = groups.reduce((sum, g) => ({
    turns: sum.turns + g.turns, samplings: sum.samplings + g.samplings, inputTokens: sum.inputTokens + g.inputTokens,
    cachedInputTokens: sum.cachedInputTokens + g.cachedInputTokens,
    outputTokens: sum.outputTokens + g.outputTokens, usd: sum.usd + g.usd, priced: sum.priced && g.priced,
  }), { turns: 0, samplings: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, usd: 0, priced: true });
  return { ...range, groupBy: req.groupBy, groups, total, truncated: rows.length > MAX_GROUPS };
}
