import { readFile } from 'node:fs/promises';
import { isDeepStrictEqual } from 'node:util';
import { ConfigError } from '../../platform/config';
import { findIntegrationByName, insertIntegration, updateIntegration } from '../../store/integrations/integrations';
import { type Integration } from '../../core/integration';
import { holdTransactionLock, inTransaction, type Db } from '../../store/pool';
import type { Logger } from '../../platform/logger';
import { readMcpConfig, type Environment, type ImportedServer } from './mcp-config-import';
import { IMPORTED_DURATION_FIELDS, IMPORTED_SETTINGS } from './integration-input';
import { EngineError } from '../../core/engine-error';
import { DEFAULT_TENANT_ID } from '../../core/tenancy';

const LOAD_LOCK_KEY = 0x696e_7466; // "intf": one load at a time across API processes
/** The tenant the servers of INTEGRATIONS_FILE belong to: they are found, and made, by name there. */
const FILE_TENANT_ID = DEFAULT_TENANT_ID;

export interface IntegrationsFileReport {
  created: string[];
  updated: string[];
  unchanged: string[];
}

/**
 * The operator's MCP servers (INTEGRATIONS_FILE, in the Claude Desktop or VS Code shape that
 * POST /v1/integrations/import reads), loaded when the API starts. This is how stdio servers reach
 * an API that listens off loopback without an ADMIN_API_KEY. Each server is created, or its
 * transport replaced, by name; integrations the file does not name are left alone. `${VAR}` is
 * expanded into env and headers values from the API's environment, as on import.
 */
export async function loadIntegrationsFile(
  opts: { db: Db; file: string; env: Environment; logger: Logger },
): Promise<IntegrationsFileReport> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(opts.file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`INTEGRATIONS_FILE ${opts.file} cannot be read as JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new ConfigError(`INTEGRATIONS_FILE ${opts.file} must hold a JSON object`);
  }
  let servers;
  try {
    servers = readMcpConfig(doc as Record<string, unknown>, { env: opts.env });
  } catch (err) {
    if (err instanceof EngineError) throw new ConfigError(`INTEGRATIONS_FILE ${opts.file}: ${err.message.replace(/\bbody\./g, '')}`);
    throw err;
  }
  const report: IntegrationsFileReport = { created: [], updated: [], unchanged: [] };
  await inTransaction(opts.db, async (tx) => {
    await holdTransactionLock(tx, LOAD_LOCK_KEY);
    for (const server of servers) {
      const existing = await findIntegrationByName(tx, server.name, FILE_TENANT_ID);
      if (!existing) {
        await insertIntegration(tx, server, FILE_TENANT_ID);
        report.created.push(server.name);
      } else if (!isDeepStrictEqual(existing.transport, server.transport) || settingsChanged(existing, server)
        || !isDeepStrictEqual(existing.approval, server.approval ?? null)) {
        const { name: _name, ...patch } = server;
        await updateIntegration(tx, existing.id, { ...patch, approval: server.approval ?? null });
        report.updated.push(server.name);
      } else {
        report.unchanged.push(server.name);
      }
    }
  });
  opts.logger.info({ file: opts.file, created: report.created, updated: report.updated }, 'integrations file loaded');
  return report;
}

/** The engine settings a file entry gives (those it omits stay as they are). */
function settingsChanged(existing: Integration, server: ImportedServer): boolean {
  const given = [...IMPORTED_SETTINGS, ...IMPORTED_DURATION_FIELDS] as (keyof ImportedServer & keyof Integration)[];
  return given.some((key) => server[key] !== undefined && server[key] !== existing[key]);
}
