/**
 * The integration and agent names the operator's files refer to: the servers INTEGRATIONS_FILE
 * defines, the integrations agent files list, and the agents agent files define (the sub-agents
 * they will list join these). Files find what they refer to by name at every sync, so whoever
 * takes such a name takes what the operator's agent uses: giving one out (creating, renaming,
 * deleting what holds it) is the operator's act.
 *
 * A name is reserved in the tenants the object that refers to it serves (core/file-tenants.ts):
 * another tenant keeps it free.
 *
 * Held by each API process, which loads the files itself (api/server.ts); no lookup is needed.
 */

import { DEFAULT_TENANT_ID } from '../core/tenancy';

export type NamedKind = 'integration' | 'agent';

export interface NameReference {
  kind: NamedKind;
  name: string;
  /** what refers to it, for a message: "INTEGRATIONS_FILE", "agent file ops.chatmd" */
  by: string;
  /** where the name is reserved: every tenant ("*") or these tenants' ids; default the tenant `default` */
  tenantIds?: '*' | readonly string[];
}

export interface OperatorNames {
  /** Replaces every reference of one source of references ("INTEGRATIONS_FILE", "AGENTS_DIR"). */
  replace(source: string, references: readonly NameReference[]): void;
  /** What refers to the name in the tenant; empty when nothing does. */
  referrers(kind: NamedKind, name: string, tenantId: string): string[];
}

export function createOperatorNames(): OperatorNames {
  const bySource = new Map<string, readonly NameReference[]>();
  return {
    replace(source, references) {
      bySource.set(source, references);
    },
    referrers(kind, name, tenantId) {
      const found = [...bySource.values()].flat()
        .filter((r) => r.kind === kind && r.name === name && reservedIn(r, tenantId)).map((r) => r.by);
      return [...new Set(found)];
    },
  };
}

function reservedIn(reference: NameReference, tenantId: string): boolean {
  const ids = reference.tenantIds ?? [DEFAULT_TENANT_ID];
  return ids === '*' || ids.includes(tenantId);
}
