import type { DiscoveredIntegration } from '../../core/discovery';

/** Bounds the catalogue in descriptions: a server with thousands of resources must not fill the context. */
const MAX_LISTED = 50;

export function listed<T>(items: T[], show: (item: T) => string): string {
  const shown = items.slice(0, MAX_LISTED).map(show).join('; ');
  return items.length > MAX_LISTED ? `${shown}; … and ${items.length - MAX_LISTED} more` : shown;
}

/**
 * Tells the LLM which integrations exist and what each offers (contract: a description names every
 * integration by id and name), so it can fill integrationId and the rest.
 */
export function integrationCatalogue(integrations: DiscoveredIntegration[], offers: (i: DiscoveredIntegration) => string): string {
  if (integrations.length === 0) return '';
  const lines = integrations.map((i) => {
    const head = `- ${i.id} (name: ${i.name})`;
    if (i.status === 'unreachable') return `${head}: unreachable (${i.error ?? 'no answer'})`;
    return `${head}: ${offers(i)}`;
  });
  return `\n\nIntegrations (use the id or the name as integrationId):\n${lines.join('\n')}`;
}

/** The integration a call names, by id or by name, among this run's integrations only: the LLM may not reach others. */
export function runIntegration<I extends DiscoveredIntegration>(integrations: I[], ref: string): I | undefined {
  return integrations.find((i) => i.id === ref) ?? integrations.find((i) => i.name === ref);
}
