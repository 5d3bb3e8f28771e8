import { integrationNameProblem, type IntegrationTransport } from '../../core/integration';
import { EngineError } from '../../core/engine-error';
import type { ApprovalPolicy } from '../../core/approval';
import {
  IMPORTED_DURATION_NAMES, IMPORTED_SETTINGS, parseApproval, parseImportedSettings, parseTransport, readImportedDurations,
  type ImportedDurations, type ImportedSettings,
} from './integration-input';

/**
 * Reads the MCP server lists of other clients: Claude Desktop's `{mcpServers: {...}}` and VS Code's
 * `{servers: {...}}`. Other top-level keys (VS Code's `inputs`, Claude's app settings) are ignored,
 * so that a whole config file can be posted as it is.
 *
 * `${VAR}` and `${env:VAR}` are expanded from the API's environment in env and headers values only:
 * those are secrets that no response shows and no error message quotes. Command, args, cwd and url
 * are shown by the API (and decide what runs or where secrets go), so a variable there is a 400.
 * Expanding is the operator's decision: the caller passes `authorizeExpansion`, which throws to refuse.
 */

/** The engine's own settings sit beside the client's fields: approval, elicitation, trust, pinning and bounds. */
export interface ImportedServer extends ImportedSettings, ImportedDurations {
  name: string;
  transport: IntegrationTransport;
  /** which tools wait for approval */
  approval?: ApprovalPolicy;
}

export type Environment = Readonly<Record<string, string | undefined>>;

export interface ImportOptions {
  env: Environment;
  /** called with the field before a variable is expanded into it; throws to refuse (no admin key) */
  authorizeExpansion?: (field: string) => void;
}

export const MAX_IMPORTED_SERVERS = 100;

const STDIO_FIELDS = new Set(['type', 'command', 'args', 'env', 'cwd']);
const HTTP_FIELDS = new Set(['type', 'url', 'headers']);
/** VS Code metadata and dev-mode settings: they do not change how the server is reached. */
const IGNORED_FIELDS = new Set(['gallery', 'version', 'dev']);
/** Fields of the engine's own, beside the transport. */
const ENGINE_FIELDS = new Set(['approval', ...IMPORTED_DURATION_NAMES, ...IMPORTED_SETTINGS]);
const VARIABLE = /\$\{([^}]*)\}/g;
const SUPPORTED_VARIABLE = /^(?:env:)?([A-Za-z_][A-Za-z0-9_]*)$/;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

interface Expansion {
  unset: Set<string>;
  unsupported: Set<string>;
  /** settings that failed their checks, by path: the 400's `field` */
  badFields: string[];
}

/** Only the values of env and headers are secrets; variables anywhere else are refused. */
const SECRET_FIELDS = new Set(['env', 'headers']);

/** Replaces the variables of one secret value; what cannot be expanded is collected. */
function expandValue(value: string, env: Environment, found: Expansion): string {
  return value.replace(VARIABLE, (whole, inner: string) => {
    const name = SUPPORTED_VARIABLE.exec(inner)?.[1];
    if (!name) {
      found.unsupported.add(whole);
      return whole;
    }
    const resolved = env[name];
    if (resolved === undefined) found.unset.add(name);
    return resolved ?? whole;
  });
}

/** The variables (as written, `${...}`) in every string of a value. */
function variablesIn(value: unknown): string[] {
  if (typeof value === 'string') return [...value.matchAll(VARIABLE)].map((m) => m[0]);
  if (Array.isArray(value)) return value.flatMap(variablesIn);
  if (isRecord(value)) return Object.values(value).flatMap(variablesIn);
  return [];
}

/**
 * Expands env and headers values (after asking authorizeExpansion), and reports a variable in any
 * other field as a problem naming the field and the variable (its name, never a value).
 */
function expandFields(
  fields: Record<string, unknown>, where: string, opts: ImportOptions, found: Expansion, problems: string[],
): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).map(([field, value]) => {
    if (!SECRET_FIELDS.has(field) || !isRecord(value)) {
      const variables = variablesIn(value);
      if (variables.length > 0) {
        const named = [...new Set(variables)].join(', ');
        problems.push(`${where}.${field}: variables are expanded only in env and headers values, found ${named}`);
      }
      return [field, value];
    }
    return [field, Object.fromEntries(Object.entries(value).map(([key, v]) => {
      if (typeof v !== 'string' || variablesIn(v).length === 0) return [key, v];
      opts.authorizeExpansion?.(`${where}.${field}.${key}`);
      return [key, expandValue(v, opts.env, found)];
    }))];
  }));
}

function transportType(entry: Record<string, unknown>): 'stdio' | 'http' | string {
  if (entry.type === undefined) {
    if (entry.command !== undefined && entry.url !== undefined) return 'both command and url';
    if (entry.command !== undefined) return 'stdio';
    if (entry.url !== undefined) return 'http';
    return 'neither command nor url';
  }
  // "sse" servers are reached over HTTP too: the worker falls back to the SSE transport when Streamable HTTP is refused.
  if (entry.type === 'stdio') return 'stdio';
  if (entry.type === 'http' || entry.type === 'sse') return 'http';
  return `unknown type ${JSON.stringify(entry.type)}`;
}

function readEntry(
  key: string, name: string, raw: unknown, opts: ImportOptions, found: Expansion, problems: string[],
): ImportedServer | undefined {
  const where = `${key}.${name}`;
  const nameProblem = integrationNameProblem(name);
  if (nameProblem || name.length > 64) problems.push(`${where}: the name ${nameProblem ?? 'must be at most 64 characters'}`);
  if (!isRecord(raw)) {
    problems.push(`${where}: must be an object`);
    return undefined;
  }
  const type = transportType(raw);
  if (type !== 'stdio' && type !== 'http') {
    problems.push(`${where}: has ${type}; give "command" for a stdio server or "url" for an HTTP one`);
    return undefined;
  }
  if ('envFile' in raw) {
    problems.push(`${where}: envFile is not supported; list the variables in env (with \${VAR} to take them from the API's environment)`);
  }
  const allowed = type === 'stdio' ? STDIO_FIELDS : HTTP_FIELDS;
  const extra = Object.keys(raw).filter((k) => !allowed.has(k) && !IGNORED_FIELDS.has(k) && !ENGINE_FIELDS.has(k) && k !== 'envFile');
  const settings = readSettings(raw, ['body', key, name], found, problems);
  if (extra.length > 0) problems.push(`${where}: ${extra.map((k) => JSON.stringify(k)).join(', ')} not allowed for a ${type} server`);

  const fields = Object.fromEntries(Object.entries(raw).filter(([k]) => allowed.has(k)));
  const expanded = expandFields(fields, `body.${where}`, opts, found, problems);
  let approval: ApprovalPolicy | undefined;
  try {
    approval = parseApproval(raw.approval, ['body', key, name, 'approval']) ?? undefined;
  } catch (err) {
    problems.push(err instanceof EngineError ? err.message.replace(/^Invalid approval policy: /, '') : String(err));
  }
  try {
    return { name, transport: parseTransport({ ...expanded, type }, ['body', key, name]), ...settings, ...(approval ? { approval } : {}) };
  } catch (err) {
    problems.push(err instanceof EngineError ? err.message.replace(/^Invalid transport: /, '') : String(err));
    return undefined;
  }
}

function readSettings(
  raw: Record<string, unknown>, where: string[], found: Expansion, problems: string[],
): Omit<ImportedServer, 'name' | 'transport' | 'approval'> {
  let settings: ImportedSettings = {};
  try {
    settings = parseImportedSettings(raw, where);
  } catch (err) {
    if (!(err instanceof EngineError)) throw err;
    problems.push(err.message);
    found.badFields.push(String(err.details.field));
  }
  return { ...settings, ...readImportedDurations(raw, where.join('.'), problems) };
}

/** The servers of a Claude Desktop or VS Code document, in document order; any problem is a 400 naming every one. */
export function readMcpConfig(doc: Record<string, unknown>, opts: ImportOptions): ImportedServer[] {
  const keys = ['mcpServers', 'servers'].filter((k) => doc[k] !== undefined);
  if (keys.length !== 1) {
    const found = keys.length === 0
      ? 'The document has neither "mcpServers" (Claude Desktop) nor "servers" (VS Code)'
      : 'The document has both "mcpServers" (Claude Desktop) and "servers" (VS Code)';
    throw new EngineError('validation', `${found}: give exactly one of them`);
  }
  const key = keys[0];
  const servers = doc[key];
  if (!isRecord(servers)) throw new EngineError('validation', `body.${key} must be an object of servers keyed by name`);
  const entries = Object.entries(servers);
  if (entries.length === 0) throw new EngineError('validation', `body.${key} lists no servers`);
  if (entries.length > MAX_IMPORTED_SERVERS) {
    throw new EngineError('validation', `body.${key} lists more than ${MAX_IMPORTED_SERVERS} servers`);
  }

  const found: Expansion = { unset: new Set(), unsupported: new Set(), badFields: [] };
  const problems: string[] = [];
  const imported = entries.flatMap(([name, raw]) => readEntry(key, name, raw, opts, found, problems) ?? []);
  if (found.unset.size > 0) {
    const names = [...found.unset].sort();
    throw new EngineError('unset_variable',
      `Environment variable${names.length > 1 ? 's' : ''} not set in the API's environment: ${names.join(', ')}`);
  }
  if (found.unsupported.size > 0) {
    problems.unshift(`unsupported variables ${[...found.unsupported].join(', ')}: only \${VAR} and \${env:VAR} are expanded`);
  }
  if (problems.length > 0) {
    const field = found.badFields.length > 0 ? { field: found.badFields.join(', ') } : {};
    throw new EngineError('validation', `Invalid ${key}: ${problems.join('; ')}`, field);
  }
  return imported;
}
