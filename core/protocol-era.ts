/**
 * Which MCP protocol era the engine speaks with an integration's server. `auto` negotiates
 * (`server/discover`, falling back to `initialize`) and the outcome is kept per integration, so
 * later connections skip the probe; a version pins that era and never falls back.
 */
export const PROTOCOL_CHOICES = ['auto', '2025-11-25', '2026-07-28'] as const;
export type IntegrationProtocol = typeof PROTOCOL_CHOICES[number];

/** The era a connection speaks, named by its newest revision: `2025-11-25` is the whole `initialize` family. */
export const PROTOCOL_ERAS = ['2025-11-25', '2026-07-28'] as const;
export type ProtocolEra = typeof PROTOCOL_ERAS[number];

/** The outcome of a negotiation: the era, and on the 2026 era the server's `server/discover` answer. */
export interface EraOutcome {
  era: ProtocolEra;
  discover?: Record<string, unknown>;
}

/** A negotiation's outcome as kept for the integration: the era, and when the probe found it. */
export interface EraProbe extends EraOutcome {
  probedAt: string;
}

/**
 * Where negotiated eras are kept: the composition root hands in the database's
 * (store/integrations/era-probes.ts), so the MCP client imports no storage code. A probe's
 * outcome belongs to the transport it was probed over: one for another URL, command or args is not read.
 */
export interface EraProbeStore {
  read(integration: { id: string; transport: EraTransport }): Promise<EraProbe | undefined>;
  save(integration: { id: string; transport: EraTransport }, outcome: EraOutcome): Promise<void>;
  clear(integrationId: string): Promise<void>;
}

/** What of a transport decides which server answers: a probe's outcome is kept per these. */
export type EraTransport = { type: 'stdio'; command: string; args?: string[] } | { type: 'http'; url: string };

/** The era in use, as GET /v1/integrations/:id shows it: a pin is its own era; `auto` shows the last probe's, if any. */
export function eraInUse(protocol: IntegrationProtocol, probe: EraProbe | undefined): ProtocolEra | null {
  return protocol === 'auto' ? probe?.era ?? null : protocol;
}
