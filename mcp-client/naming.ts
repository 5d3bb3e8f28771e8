import { createHash } from 'node:crypto';

/** Providers accept tool names of [A-Za-z0-9_-], at most 64 characters (OpenAI's limit, the strictest). */
export const MAX_TOOL_NAME_LENGTH = 64;
const HASH_LENGTH = 8;

const sanitise = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, '_');
const shortHash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, HASH_LENGTH);

/**
 * The name the LLM sees for an MCP tool: `<integration>__<tool>`. A name that is too long keeps
 * its readable start and ends with a hash of the full original, so two long names stay distinct.
 */
export function exposedToolName(integrationName: string, toolName: string): string {
  const full = `${sanitise(integrationName)}__${sanitise(toolName)}`;
  if (full.length <= MAX_TOOL_NAME_LENGTH) return full;
  const hash = shortHash(`${integrationName}\u0000${toolName}`);
  return `${full.slice(0, MAX_TOOL_NAME_LENGTH - HASH_LENGTH - 1)}_${hash}`;
}

/**
 * Names for all tools of a run, unique: sanitising can make two tools collide ("a.b" and "a_b"),
 * and then the later one gets a hashed name.
 */
export function assignExposedNames(tools: { integrationName: string; toolName: string }[]): string[] {
  const taken = new Set<string>();
  return tools.map(({ integrationName, toolName }) => {
    let name = exposedToolName(integrationName, toolName);
    if (taken.has(name)) {
      const hash = shortHash(`${integrationName}\u0000${toolName}\u0000${taken.size}`);
      name = `${name.slice(0, MAX_TOOL_NAME_LENGTH - HASH_LENGTH - 1)}_${hash}`;
    }
    taken.add(name);
    return name;
  });
}
