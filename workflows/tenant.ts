import { workflowInfo } from '@temporalio/workflow';
import type { SearchAttributePair } from '@temporalio/common';
import { runSearchAttributeKeys, tenantIdKey } from '../core/search-attributes';
import { DEFAULT_TENANT_ID } from '../core/tenancy';

/**
 * The run's tenant as a search attribute, for the start options of its sub-agents' runs and of its
 * continuation: what it started with (use-cases/runs/start-run.ts). A run started before the
 * attribute has none, and is the tenant `default`'s. Read from the execution's own attributes,
 * which replays read the same.
 */
export function tenantAttribute(): SearchAttributePair {
  return { key: tenantIdKey, value: workflowInfo().typedSearchAttributes.get(tenantIdKey) ?? DEFAULT_TENANT_ID };
}

/**
 * A continuation's search attributes: the engine's attributes as this execution has them now
 * (what the server would copy), with the tenant set. Only the engine's: a system attribute in the
 * options would be refused.
 */
export function continuationAttributes(): SearchAttributePair[] {
  const engine = new Set(runSearchAttributeKeys.filter((k) => k.name !== tenantIdKey.name).map((k) => k.name));
  return [...workflowInfo().typedSearchAttributes.getAll().filter((p) => engine.has(p.key.name)), tenantAttribute()];
}
