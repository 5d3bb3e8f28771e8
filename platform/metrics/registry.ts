import { collectDefaultMetrics, Registry } from 'prom-client';

/** Every engine metric starts with this, in Prometheus' units and suffixes (_total, _seconds, _bytes). */
export const METRIC_PREFIX = 'agent_engine_';

/**
 * prom-client's gauges of active handles, requests and resources in all, named `_total`, which
 * Prometheus reserves for counters (`promtool check metrics` reports them). Left out: each is the
 * sum of the gauge of the same name without `_total`, by type.
 */
const GAUGES_NAMED_AS_COUNTERS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** A registry of the process's own (never prom-client's global one): the API and the worker of npm start share a process. */
export function processRegistry(role: 'api' | 'worker'): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ process: role });
  collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  for (const name of GAUGES_NAMED_AS_COUNTERS) registry.removeSingleMetric(`${METRIC_PREFIX}${name}`);
  return registry;
}
