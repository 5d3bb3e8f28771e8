import { UriTemplate } from '@modelcontextprotocol/client';
import type { DiscoveredIntegration } from '../core/discovery';

export interface ResolvedUri {
  uri: string;
  /** whether the URI is a listed resource or matches a listed template; an unknown one is still tried */
  known: boolean;
  /** the listed resource or template it came from, for its mimeType and name */
  listed?: { name: string; mimeType?: string };
}

/** MCP template variables are strings: numbers and booleans as written, arrays element-wise, objects as JSON. */
export function templateVariables(parameters: Record<string, unknown>): Record<string, string | string[]> {
  const asString = (v: unknown) => (typeof v === 'string' ? v : v !== null && typeof v === 'object' ? JSON.stringify(v) : String(v));
  return Object.fromEntries(Object.entries(parameters).map(([k, v]) => [k, Array.isArray(v) ? v.map(asString) : asString(v)]));
}

/** Path-like variables must be given; query ones (`{?x}`, `{&y}`) may be left out, as RFC 6570 allows. */
function requiredVariables(template: string): string[] {
  return [...template.matchAll(/\{([^}]+)\}/g)]
    .filter((m) => !/^[?&]/.test(m[1]))
    .flatMap((m) => m[1].replace(/^[+#./;]/, '').split(',').map((n) => n.trim().replace(/(\*|:\d+)$/, '')));
}

/**
 * Fills a resource template with the LLM's parameters (through the SDK's own UriTemplate, so we
 * expand exactly as servers match), and says whether the result is something the server listed.
 * Throws when a template is left unfilled: the server could only answer "not found".
 */
export function resolveResourceUri(
  resourceUri: string,
  parameters: Record<string, unknown> | undefined,
  listing: Pick<DiscoveredIntegration, 'resources' | 'resourceTemplates'>,
): ResolvedUri {
  let uri = resourceUri;
  let fromTemplate = listing.resourceTemplates.find((t) => t.uriTemplate === resourceUri);
  if (UriTemplate.isTemplate(resourceUri)) {
    const template = new UriTemplate(resourceUri);
    const vars = templateVariables(parameters ?? {});
    const missing = requiredVariables(resourceUri).filter((n) => !(n in vars));
    if (missing.length > 0) throw new Error(`the URI template ${resourceUri} needs parameters: ${missing.join(', ')}`);
    uri = template.expand(vars);
  }
  const resource = listing.resources.find((r) => r.uri === uri);
  if (resource) return { uri, known: true, listed: resource };
  fromTemplate ??= listing.resourceTemplates.find((t) => {
    try {
      return new UriTemplate(t.uriTemplate).match(uri) !== null;
    } catch {
      return false;
    }
  });
  return { uri, known: Boolean(fromTemplate), listed: fromTemplate };
}
