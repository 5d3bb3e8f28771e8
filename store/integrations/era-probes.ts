import { createHash } from 'node:crypto';
import type { EraOutcome, EraTransport, EraProbe, EraProbeStore, ProtocolEra } from '../../core/protocol-era';
import type { Queryable } from '../pool';

/** A server/discover answer larger than this is not kept: the next connection probes again. */
export const MAX_DISCOVER_BYTES = 64 * 1024;

/** What decides which server answers: another URL, command or args is another server, probed anew. */
export function transportFingerprint(transport: EraTransport): string {
  const what = transport.type === 'http' ? ['http', transport.url] : ['stdio', transport.command, ...(transport.args ?? [])];
  return createHash('sha256').update(JSON.stringify(what)).digest('hex');
}

interface Row { id: string; era: ProtocolEra; discover: Record<string, unknown> | null; fingerprint: string; probed_at: Date }

const toProbe = (r: Row): EraProbe => ({
  era: r.era, ...(r.discover ? { discover: r.discover } : {}), probedAt: r.probed_at.toISOString(),
});

/** The kept probes of these integrations that still match their transports, by integration id. */
export async function readEraProbes(
  db: Queryable, integrations: { id: string; transport: EraTransport }[],
): Promise<Map<string, EraProbe>> {
  if (integrations.length === 0) return new Map();
  const { rows } = await db.query<Row>('SELECT * FROM integration_protocol WHERE id = ANY($1)', [integrations.map((i) => i.id)]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const probes = new Map<string, EraProbe>();
  for (const i of integrations) {
    const row = byId.get(i.id);
    if (row && row.fingerprint === transportFingerprint(i.transport)) probes.set(i.id, toProbe(row));
  }
  return probes;
}

async function saveEraProbe(db: Queryable, integration: { id: string; transport: EraTransport }, outcome: EraOutcome): Promise<void> {
  const discover = outcome.discover ? JSON.stringify(outcome.discover) : null;
  // Without its answer a 2026 era cannot skip the probe: not kept, probed again next time.
  if (outcome.era === '2026-07-28' && (!discover || Buffer.byteLength(discover) > MAX_DISCOVER_BYTES)) {
    await clearEraProbe(db, integration.id);
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

async function clearEraProbe(db: Queryable, integrationId: string): Promise<void> {
  await db.query('DELETE FROM integration_protocol WHERE id = $1', [integrationId]);
}

/** The negotiated eras as the worker's MCP pool reads and records them (core/protocol-era.ts). */
export function eraProbeStore(db: Queryable): EraProbeStore {
  return {
    read: async (integration) => (await readEraProbes(db, [integration])).get(integration.id),
    save: (integration, outcome) => saveEraProbe(db, integration, outcome),
    clear: (integrationId) => clearEraProbe(db, integrationId),
  };
}
