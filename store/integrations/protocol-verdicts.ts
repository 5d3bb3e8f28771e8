import { createHash } from 'node:crypto';
import type { EraOutcome, EraTransport, EraVerdict, EraVerdicts, ProtocolEra } from '../../core/protocol-era';
import type { Queryable } from '../pool';

/** A server/discover answer larger than this is not kept: the next connection probes again. */
export const MAX_DISCOVER_BYTES = 64 * 1024;

/** What decides which server answers: another URL, command or args is another server, probed anew. */
export function transportFingerprint(transport: EraTransport): string {
  const what = transport.type === 'http' ? ['http', transport.url] : ['stdio', transport.command, ...(transport.args ?? [])];
  return createHash('sha256').update(JSON.stringify(what)).digest('hex');
}

interface Row { id: string; era: ProtocolEra; discover: Record<string, unknown> | null; fingerprint: string; probed_at: Date }

const toVerdict = (r: Row): EraVerdict => ({
  era: r.era, ...(r.discover ? { discover: r.discover } : {}), probedAt: r.probed_at.toISOString(),
});

/** The verdicts of these integrations that still match their transports, by integration id. */
export async function readVerdicts(
  db: Queryable, integrations: { id: string; transport: EraTransport }[],
): Promise<Map<string, EraVerdict>> {
  if (integrations.length === 0) return new Map();
  const { rows } = await db.query<Row>('SELECT * FROM integration_protocol WHERE id = ANY($1)', [integrations.map((i) => i.id)]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const verdicts = new Map<string, EraVerdict>();
  for (const i of integrations) {
    const row = byId.get(i.id);
    if (row && row.fingerprint === transportFingerprint(i.transport)) verdicts.set(i.id, toVerdict(row));
  }
  return verdicts;
}

async function saveVerdict(db: Queryable, integration: { id: string; transport: EraTransport }, outcome: EraOutcome): Promise<void> {
  const discover = outcome.discover ? JSON.stringify(outcome.discover) : null;
  // Without its answer a 2026 verdict cannot skip the probe: not kept, probed again next time.
  if (outcome.era === '2026-07-28' && (!discover || Buffer.byteLength(discover) > MAX_DISCOVER_BYTES)) {
    await clearVerdict(db, integration.id);
    return;
  }
  // An integration deleted meanwhile has no row to refer to: nothing is kept.
  await db.query(
    `INSERT INTO integration_protocol (id, era, discover, fingerprint, probed_at)
     SELECT $1, $2, $3::jsonb, $4, now() WHERE EXISTS (SELECT 1 FROM integrations WHERE id = $1)
     ON CONFLICT (id) DO UPDATE SET era = $2, discover = $3::jsonb, fingerprint = $4, probed_at = now()`,
    [integration.id, outcome.era, outcome.era === '2026-07-28' ? discover : null, transportFingerprint(integration.transport)],
  );
}

async function clearVerdict(db: Queryable, integrationId: string): Promise<void> {
  await db.query('DELETE FROM integration_protocol WHERE id = $1', [integrationId]);
}

/** The negotiated eras as the worker's MCP pool reads and records them (core/protocol-era.ts). */
export function eraVerdicts(db: Queryable): EraVerdicts {
  return {
    read: async (integration) => (await readVerdicts(db, [integration])).get(integration.id),
    save: (integration, outcome) => saveVerdict(db, integration, outcome),
    clear: (integrationId) => clearVerdict(db, integrationId),
  };
}
