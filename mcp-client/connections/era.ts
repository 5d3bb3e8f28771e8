import type { Client, DiscoverResult, PriorDiscovery, VersionNegotiationMode } from '@modelcontextprotocol/client';
import type { Integration } from '../../core/integration';
import type { EraOutcome, EraProbe } from '../../core/protocol-era';

/**
 * How a connection settles its protocol era (docs/integrations.md, "Protocol eras"). A pinned
 * integration never probes for another; an `auto` one connects with its kept verdict while that is
 * fresh, and otherwise probes (`server/discover`, falling back to `initialize`) and keeps the outcome.
 * A kept 2025 verdict would pass silently against a server upgraded since, so it is trusted for a day.
 */
export const PROBE_HORIZON_MS = 24 * 3_600_000;

/**
 * Bound on the probe. Over stdio a server silent this long is taken for a 2025 one (the SDK's
 * reading: some never answer an unknown request before `initialize`); over HTTP silence is an outage.
 */
export const PROBE_TIMEOUT_MS = 10_000;

export interface EraPlan {
  /** the client's negotiation mode: used only when `prior` is absent */
  mode: VersionNegotiationMode;
  /** the verdict the connection starts from, skipping the probe */
  prior?: PriorDiscovery;
  /** whether the outcome is a fresh verdict to keep */
  probes: boolean;
}

export const LEGACY_PLAN: EraPlan = { mode: 'legacy', prior: { kind: 'legacy' }, probes: false };

export function eraPlan(integration: Pick<Integration, 'protocol'>, verdict: EraProbe | undefined, now = Date.now()): EraPlan {
  if (integration.protocol === '2025-11-25') return LEGACY_PLAN;
  if (integration.protocol === '2026-07-28') return { mode: { pin: '2026-07-28' }, probes: false };
  if (!verdict || now - Date.parse(verdict.probedAt) >= PROBE_HORIZON_MS) return { mode: 'auto', probes: true };
  if (verdict.era === '2025-11-25') return { ...LEGACY_PLAN, mode: 'auto' };
  if (!verdict.discover) return { mode: 'auto', probes: true };
  return { mode: 'auto', prior: { kind: 'modern', discover: verdict.discover as unknown as DiscoverResult }, probes: false };
}

/** What a connected client negotiated, to keep as the integration's verdict. */
export function eraOutcome(client: Client): EraOutcome {
  if (client.getProtocolEra() !== 'modern') return { era: '2025-11-25' };
  return { era: '2026-07-28', discover: client.getDiscoverResult() as unknown as Record<string, unknown> };
}
