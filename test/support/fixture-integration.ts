import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Integration, NewIntegration } from '../../core/integration';
import { insertIntegration } from '../../store/integrations/integrations';
import type { Queryable } from '../../store/pool';
import { ROOT } from './processes';

/** The MCP fixture server (test/fixtures/mcp-fixture-server.ts) over stdio. */
export const FIXTURE_SERVER = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');

/** An integration of the fixture server, with a fresh name and whatever else the test sets; the tenant `default`'s unless told. */
export function insertFixtureIntegration(
  db: Queryable, fields: Partial<Omit<NewIntegration, 'transport'>> = {}, tenantId?: string,
): Promise<Integration> {
  return insertIntegration(db, {
    name: `fx-${randomUUID().slice(0, 8)}`, ...fields,
    transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE_SERVER], cwd: ROOT },
  }, tenantId);
}
